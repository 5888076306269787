#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "kernels/gemv_prefetch.h"
#include "kernels/gemv_split.h"
#include "kernels/isa.h"
#include "kernels/kernel_testing.h"

namespace anelm::kernels {
namespace {

// A weight matrix in one dtype and the exact f32 values it holds.
struct Weights {
    DType dtype;
    std::vector<float> values;  // f32 [n_out, n_in], as stored
    std::vector<uint16_t> halves;
    Matrix matrix;
};

Weights random_weights(std::mt19937& rng, DType dtype, int64_t n_out, int64_t n_in) {
    Weights w{dtype, test::random_floats(rng, n_out * n_in), {}, {}};
    if (dtype == DType::f16) w.halves = test::to_f16(w.values);
    if (dtype == DType::bf16) w.halves = test::to_bf16(w.values);
    for (size_t i = 0; i < w.halves.size(); ++i) {
        w.values[i] = dtype == DType::f16 ? f16_to_f32(w.halves[i]) : bf16_to_f32(w.halves[i]);
    }
    const void* data = w.halves.empty() ? static_cast<const void*>(w.values.data())
                                        : static_cast<const void*>(w.halves.data());
    w.matrix = Matrix{dtype, data, n_out, n_in};
    return w;
}

// Compares matmul against the double-precision formula, each element within
// tol of the sum of |x| |w| over its products (the scale of rounding error).
void expect_matmul_exact(const Weights& w, const std::vector<float>& x, int64_t n_tokens,
                         const std::vector<float>& y, float tol, const char* what) {
    const int64_t n_out = w.matrix.n_out, n_in = w.matrix.n_in;
    for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t o = 0; o < n_out; ++o) {
            double sum = 0.0, abs_sum = 0.0;
            for (int64_t i = 0; i < n_in; ++i) {
                const double p = double{x[t * n_in + i]} * w.values[o * n_in + i];
                sum += p;
                abs_sum += std::abs(p);
            }
            ASSERT_NEAR(y[t * n_out + o], sum, tol * abs_sum + 1e-30)
                << what << " " << dtype_name(w.dtype) << " n_out " << n_out << " n_in " << n_in
                << " n_tokens " << n_tokens << " at t " << t << " o " << o;
        }
    }
}

TEST(Dispatch, NamesTheActivePath) {
    const std::string isa = active_isa();
    EXPECT_TRUE(isa == "avx512" || isa == "avx2" || isa == "neon" || isa == "scalar") << isa;
    if (std::getenv("ANELM_ISA")) return;  // a lower level chosen for this run
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        const bool avx512 =
            __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
        EXPECT_EQ(isa, avx512 ? "avx512" : "avx2");
    }
#elif defined(__aarch64__)
    EXPECT_EQ(isa, "neon");
#endif
}

TEST(Dispatch, EveryAvailableIsaCanBeChosen) {
    const auto names = available_isas();
    ASSERT_FALSE(names.empty());
    EXPECT_STREQ(names.back(), "scalar");
    const std::string by_default = active_isa();
    for (const char* name : names) {
        use_isa(name);
        EXPECT_STREQ(active_isa(), name);
    }
    use_isa("");
    EXPECT_EQ(active_isa(), by_default);
    EXPECT_THROW(use_isa("avx1024"), Error);
    EXPECT_EQ(active_isa(), by_default);
}

TEST(Matmul, ReferenceMatchesTheFormula) {
    std::mt19937 rng(1);
    ThreadPool pool(2);
    for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
        const Weights w = random_weights(rng, dtype, 13, 37);
        const auto x = test::random_floats(rng, 3 * 37);
        std::vector<float> y(3 * 13);
        ref::matmul(w.matrix, x.data(), 3, y.data(), pool);
        expect_matmul_exact(w, x, 3, y, 1e-6f, "ref");
    }
}

TEST(Matmul, DispatchedMatchesTheFormulaOnOddShapes) {
    std::mt19937 rng(2);
    std::uniform_int_distribution<int64_t> n_in_dist(1, 300), n_out_dist(0, 60),
        tok_dist(gemv_max_tokens + 1, gemv_max_tokens + 40);
    for (int n_threads : {1, 2, 3}) {
        ThreadPool pool(n_threads);
        for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
            for (int rep = 0; rep < 6; ++rep) {
                const int64_t n_in = n_in_dist(rng), n_out = 2 * n_out_dist(rng) + 1;
                // Alternate streamed rows (1, 15 and 29 tokens: one pass, then
                // several with a short last one) and the blocked GEMM.
                const int64_t n_tokens = rep % 2 ? tok_dist(rng) : 1 + 7 * rep;
                const Weights w = random_weights(rng, dtype, n_out, n_in);
                const auto x = test::random_floats(rng, n_tokens * n_in);
                test::for_each_isa([&](const char* isa) {
                    std::vector<float> y(static_cast<size_t>(n_tokens * n_out), NAN);
                    matmul(w.matrix, x.data(), n_tokens, y.data(), pool);
                    expect_matmul_exact(w, x, n_tokens, y, 1e-5f, isa);
                });
            }
        }
    }
}

TEST(Matmul, DispatchedMatchesReferenceAcrossTokenCounts) {
    std::mt19937 rng(3);
    ThreadPool pool(3);
    for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
        const Weights w = random_weights(rng, dtype, 53, 203);
        // Every count of one pass and a few more, then both sides of the GEMM.
        std::vector<int64_t> counts;
        for (int64_t n = 1; n <= 20; ++n) counts.push_back(n);
        for (int64_t n = gemv_max_tokens - 2; n <= gemv_max_tokens + 2; ++n) counts.push_back(n);
        for (int64_t n_tokens : counts) {
            const auto x = test::random_floats(rng, n_tokens * 203);
            std::vector<float> want(static_cast<size_t>(n_tokens * 53));
            ref::matmul(w.matrix, x.data(), n_tokens, want.data(), pool);
            test::for_each_isa([&](const char* isa) {
                std::vector<float> y(want.size(), NAN);
                matmul(w.matrix, x.data(), n_tokens, y.data(), pool);
                test::expect_close(y, want, 1e-5f, isa);
            });
        }
    }
}

TEST(Matmul, OneTokenMatchesTheFormulaEitherSideOfTheRowLimit) {
    std::mt19937 rng(7);
    ThreadPool pool(2);
    // Rows up to the limit are read one at a time, longer ones in blocks of
    // rows; 19 rows leave a tail after the blocks.
    for (int64_t n_in : {gemv_row_max_inputs - 5, gemv_row_max_inputs, gemv_row_max_inputs + 37}) {
        const Weights w = random_weights(rng, DType::f16, 19, n_in);
        const auto x = test::random_floats(rng, n_in);
        test::for_each_isa([&](const char* isa) {
            std::vector<float> y(19, NAN);
            matmul(w.matrix, x.data(), 1, y.data(), pool);
            expect_matmul_exact(w, x, 1, y, 1e-5f, isa);
        });
    }
}

TEST(Matmul, FewTokensOnLongRowsMatchTheFormula) {
    std::mt19937 rng(9);
    ThreadPool pool(2);
    // Several tokens whose x does not stay in L1 (speculative decoding's
    // verify): 37 rows leave a block tail, 3001 inputs a vector tail.
    for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
        const Weights w = random_weights(rng, dtype, 37, 3001);
        for (int64_t n_tokens : {2, 3, 4, 5, 8}) {
            const auto x = test::random_floats(rng, n_tokens * 3001);
            test::for_each_isa([&](const char* isa) {
                std::vector<float> y(static_cast<size_t>(n_tokens * 37), NAN);
                matmul(w.matrix, x.data(), n_tokens, y.data(), pool);
                expect_matmul_exact(w, x, n_tokens, y, 1e-5f, isa);
            });
        }
    }
}

TEST(Matmul, VerifySizedTokenCountsMatchTheFormula) {
    std::mt19937 rng(12);
    ThreadPool pool(2);
    // Speculative decoding's verify passes (one pass up to the leaf's limit,
    // then several with a short last one) on odd rows and inputs.
    for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
        for (const auto& shape : {std::pair<int64_t, int64_t>{41, 1037}, {23, 77}}) {
            const int64_t n_out = shape.first, n_in = shape.second;
            const Weights w = random_weights(rng, dtype, n_out, n_in);
            for (int64_t n_tokens : {1, 2, 3, 5, 8, 13, 16}) {
                const auto x = test::random_floats(rng, n_tokens * n_in);
                test::for_each_isa([&](const char* isa) {
                    std::vector<float> y(static_cast<size_t>(n_tokens * n_out), NAN);
                    matmul(w.matrix, x.data(), n_tokens, y.data(), pool);
                    expect_matmul_exact(w, x, n_tokens, y, 1e-5f, isa);
                });
            }
        }
    }
}

TEST(Matmul, GemvLeavesTakeUpToTheirTokenLimitAtOnce) {
    std::mt19937 rng(13);
    ThreadPool pool(1);
    // Each leaf called directly with every token count it takes, on rows
    // [2, n_out - 1) of an odd block, rows of y further apart than n_out.
    for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
        const int64_t n_out = 35, n_in = 301, ldy = n_out + 3;
        const Weights w = random_weights(rng, dtype, n_out, n_in);
        test::for_each_isa([&](const char* name) {
            const Isa* isa = active();
            if (!isa) return;
            // AVX-512 reads the weights once for a whole 8-token verify pass.
            if (std::string(name) == "avx512") {
                EXPECT_GE(isa->gemv_tokens, 8);
            }
            for (int64_t n_tokens = 1; n_tokens <= isa->gemv_tokens; ++n_tokens) {
                const auto x = test::random_floats(rng, n_tokens * n_in);
                std::vector<float> want(static_cast<size_t>(n_tokens * n_out));
                ref::matmul(w.matrix, x.data(), n_tokens, want.data(), pool);
                std::vector<float> y(static_cast<size_t>(n_tokens * ldy), NAN);
                isa->gemv(w.matrix, x.data(), n_tokens, 2, n_out - 1, y.data(), ldy);
                for (int64_t t = 0; t < n_tokens; ++t) {
                    for (int64_t o = 0; o < ldy; ++o) {
                        const float got = y[t * ldy + o];
                        if (o < 2 || o >= n_out - 1) {
                            ASSERT_TRUE(std::isnan(got)) << name << " wrote row " << o;
                        } else {
                            ASSERT_NEAR(got, want[t * n_out + o], 1e-4f)
                                << name << " " << dtype_name(dtype) << " n_tokens " << n_tokens
                                << " t " << t << " o " << o;
                        }
                    }
                }
            }
        });
    }
}

TEST(Matmul, LargerBlockedShapesMatchTheFormula) {
    std::mt19937 rng(4);
    ThreadPool pool(2);
    // Several k blocks, output blocks and token chunks, with tails in each; past
    // the streamed products' token limit, so the GEMM runs.
    const Weights w = random_weights(rng, DType::f16, 301, 2111);
    const int64_t n_tokens = gemv_max_tokens + 19;
    const auto x = test::random_floats(rng, n_tokens * 2111);
    test::for_each_isa([&](const char* isa) {
        std::vector<float> y(static_cast<size_t>(n_tokens * 301), NAN);
        matmul(w.matrix, x.data(), n_tokens, y.data(), pool);
        expect_matmul_exact(w, x, n_tokens, y, 1e-5f, isa);
    });
}

TEST(Matmul, ManyTokensTakeSeveralPasses) {
    std::mt19937 rng(6);
    ThreadPool pool(3);
    const Weights w = random_weights(rng, DType::bf16, 37, 45);
    const int64_t n_tokens = 1100;
    const auto x = test::random_floats(rng, n_tokens * 45);
    test::for_each_isa([&](const char* isa) {
        std::vector<float> y(static_cast<size_t>(n_tokens * 37), NAN);
        matmul(w.matrix, x.data(), n_tokens, y.data(), pool);
        expect_matmul_exact(w, x, n_tokens, y, 1e-5f, isa);
    });
}

TEST(Matmul, EmptyInputDimensionGivesZeros) {
    ThreadPool pool(2);
    const float dummy = 0.0f;
    test::for_each_isa([&](const char*) {
        for (int64_t n_tokens : {1, 30}) {
            std::vector<float> y(static_cast<size_t>(n_tokens * 5), NAN);
            matmul(Matrix{DType::f32, &dummy, 5, 0}, &dummy, n_tokens, y.data(), pool);
            for (float v : y) EXPECT_EQ(v, 0.0f);
        }
    });
}

TEST(Matmul, ForcedScalarUsesTheReference) {
    std::mt19937 rng(5);
    ThreadPool pool(2);
    const Weights w = random_weights(rng, DType::bf16, 9, 77);
    const auto x = test::random_floats(rng, 12 * 77);
    std::vector<float> y(12 * 9), want(12 * 9);
    force_scalar(true);
    EXPECT_STREQ(active_isa(), "scalar");
    matmul(w.matrix, x.data(), 12, y.data(), pool);
    force_scalar(false);
    ref::matmul(w.matrix, x.data(), 12, want.data(), pool);
    EXPECT_EQ(y, want);
}

// Stacked matrices match the formula whatever task boundaries fall inside or
// across them; rows in multiples of 8 (every model's) get exactly the sums
// matmul gives them, since the leaves' blocks of rows fall the same way.
TEST(Matmul, StackedMatvecEqualsSeparateProducts) {
    std::mt19937 rng(21);
    ThreadPool pool(2);
    for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
        for (const std::vector<int64_t>& rows :
             std::vector<std::vector<int64_t>>{{64, 16, 16}, {3, 1, 40, 7}, {2048, 512, 512}}) {
            const int64_t n_in = rows[0] == 3 ? 77 : 256;
            std::vector<Weights> weights;
            for (int64_t n_out : rows) weights.push_back(random_weights(rng, dtype, n_out, n_in));
            const auto x = test::random_floats(rng, n_in);
            std::vector<Matrix> ws;
            std::vector<std::vector<float>> stacked, separate;
            std::vector<float*> ys;
            for (const Weights& w : weights) {
                ws.push_back(w.matrix);
                stacked.emplace_back(static_cast<size_t>(w.matrix.n_out), NAN);
                separate.emplace_back(static_cast<size_t>(w.matrix.n_out), NAN);
                matmul(w.matrix, x.data(), 1, separate.back().data(), pool);
            }
            for (auto& y : stacked) ys.push_back(y.data());
            matvec_stacked(ws, x.data(), ys, pool);
            for (size_t k = 0; k < weights.size(); ++k)
                expect_matmul_exact(weights[k], x, 1, stacked[k], 1e-5f, "stacked");
            if (rows[0] % 8 == 0) {
                EXPECT_EQ(stacked, separate) << dtype_name(dtype);
            }
        }
    }
    std::vector<float> a(4), b(4);
    const float x[4] = {};
    EXPECT_THROW(
        matvec_stacked({Matrix{DType::f32, a.data(), 1, 4}, Matrix{DType::f16, b.data(), 1, 4}}, x,
                       {a.data(), b.data()}, pool),
        Error);
}

TEST(Matmul, RejectsNonFloatWeights) {
    ThreadPool pool(1);
    const int32_t data[4] = {};
    float x[2] = {}, y[2] = {};
    EXPECT_THROW(matmul(Matrix{DType::i32, data, 2, 2}, x, 1, y, pool), Error);
    EXPECT_THROW(ref::matmul(Matrix{DType::i32, data, 2, 2}, x, 1, y, pool), Error);
}

}  // namespace
}  // namespace anelm::kernels
