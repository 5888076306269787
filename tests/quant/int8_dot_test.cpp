// Integer dot products of quantized matrices (kernels::int8_dot_applies): the
// rounding to int8, the SIMD leaves against the scalar reference, the error
// against the exact product, and the shapes that keep the exact path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "base/half.h"
#include "kernels/kernels.h"
#include "kernels/quant_isa.h"
#include "kernels/quant_kernels.h"
#include "quant/quant_testing.h"

namespace anelm::kernels {
namespace {

using Format = test::QuantFormat;
using test::describe;

// Every format with integer leaves.
const Format int8_formats[] = {{QuantKind::lut, 4, 8},  {QuantKind::lut, 4, 1},
                               {QuantKind::lut, 6, 8},  {QuantKind::lut, 6, 0},
                               {QuantKind::int8, 8, 0}, {QuantKind::int4, 4, 0}};

quant::QuantizedMatrix int8_matrix(std::mt19937& rng, const Format& f, int64_t n_out,
                                   int64_t n_in) {
    auto q = test::random_quantized(rng, f.kind, f.nbits, n_out, n_in, f.group);
    q.use_int8_dot();
    return q;
}

// Activations with an outlier channel, as real ones have.
std::vector<float> random_x(std::mt19937& rng, int64_t n) {
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) v = d(rng);
    if (n > 5) x[5] *= 30.0f;
    return x;
}

std::vector<float> product(const QuantMatrix& w, const std::vector<float>& x, int64_t n_tokens,
                           const QuantIsa* isa, ThreadPool& pool) {
    std::vector<float> y(static_cast<size_t>(n_tokens * w.n_out), NAN);
    if (isa) {
        quant_matmul(*isa, w, x.data(), n_tokens, y.data(), pool);
    } else {
        ref::quant_matmul(w, x.data(), n_tokens, y.data(), pool);
    }
    return y;
}

// The values a row is summed on in integers, scaled back: s * c(i).
std::vector<float> int8_row(const QuantMatrix& w, int64_t o) {
    std::vector<float> row(static_cast<size_t>(w.n_in));
    QuantMatrix exact = w;
    exact.int8_dot = false;
    ref::quant_decode_row(exact, o, 0, w.n_in, row.data());
    if (w.kind != QuantKind::lut) return row;
    // Decoded values are table entries; map each to its int8 entry.
    const int64_t n = int64_t{1} << w.nbits, g = o / w.group;
    for (float& v : row) {
        for (int64_t e = 0; e < n; ++e) {
            if (f16_to_f32(w.lut[g * n + e]) == v) {
                v = w.dot_scale[g] * static_cast<float>(w.dot_lut[g * n + e]);
                break;
            }
        }
    }
    return row;
}

TEST(Int8Dot, RoundsBlocksToInt8WithTiesToEven) {
    // max |x| = 127: the scale is 1, so the halves are exact ties.
    const float x[] = {-127.0f, 2.5f, 3.5f, -2.5f, 0.0f, 10.2f};
    int8_t q[6];
    EXPECT_EQ(round_to_int8(x, 6, q), 1.0f);
    const int8_t want[] = {-127, 2, 4, -2, 0, 10};
    EXPECT_TRUE(std::equal(q, q + 6, want));
    const float halves[] = {0.5f, 1.0f};  // scale 1 / 127: 1.0 -> 127, 0.5 -> 63.5 -> 64
    EXPECT_FLOAT_EQ(round_to_int8(halves, 2, q), 1.0f / 127.0f);
    EXPECT_EQ(q[0], 64);
    EXPECT_EQ(q[1], 127);

    const float zeros[3] = {};
    int8_t qz[3] = {1, 1, 1};
    EXPECT_EQ(round_to_int8(zeros, 3, qz), 0.0f);
    EXPECT_TRUE(std::all_of(qz, qz + 3, [](int8_t v) { return v == 0; }));

    const float with_inf[2] = {1.0f, INFINITY};
    EXPECT_TRUE(std::isnan(round_to_int8(with_inf, 2, qz)));
    const float with_nan[3] = {1.0f, NAN, 2.0f};
    qz[0] = 1;
    EXPECT_TRUE(std::isnan(round_to_int8(with_nan, 3, qz)));
    EXPECT_TRUE(std::all_of(qz, qz + 3, [](int8_t v) { return v == 0; }));
}

// Each instruction set's block rounding against round_to_int8, its values
// moved to their int8_slot: ties, zeros, infinities and NaN included.
TEST(Int8Dot, SimdBlockRoundingMatchesThePortableOne) {
    std::mt19937 rng(11);
    std::vector<std::vector<float>> blocks;
    for (int i = 0; i < 20; ++i) blocks.push_back(random_x(rng, int8_block));
    std::vector<float> ties(int8_block);
    for (int64_t e = 0; e < int8_block; ++e) ties[e] = static_cast<float>(e % 9) - 4.5f;
    ties[7] = -127.0f;  // the scale 1: every other value an exact tie
    blocks.push_back(ties);
    blocks.emplace_back(int8_block, 0.0f);
    for (float bad : {INFINITY, -INFINITY, NAN}) {
        blocks.push_back(random_x(rng, int8_block));
        blocks.back()[93] = bad;
    }
    int tested = 0;
    for (const QuantIsa* isa : quant_available()) {
        if (!isa->round_int8_block) continue;
        for (int nbits : {4, 6, 8}) {
            for (const auto& x : blocks) {
                std::vector<int8_t> natural(int8_block), want(int8_block), q(int8_block);
                std::vector<uint8_t> magnitude(int8_block);
                const float want_scale = round_to_int8(x.data(), int8_block, natural.data());
                int32_t want_sum = 0, sum = -1;
                for (int64_t e = 0; e < int8_block; ++e) {
                    want[isa->int8_slot(nbits, e)] = natural[e];
                    want_sum += natural[e];
                }
                const float scale =
                    isa->round_int8_block(x.data(), nbits, q.data(), magnitude.data(), &sum);
                const std::string what = std::string(isa->name) + " nbits " + std::to_string(nbits);
                if (std::isnan(want_scale)) {
                    EXPECT_TRUE(std::isnan(scale)) << what;
                } else {
                    EXPECT_EQ(scale, want_scale) << what;
                }
                EXPECT_EQ(q, want) << what;
                EXPECT_EQ(sum, want_sum) << what;
                for (int64_t j = 0; j < int8_block; ++j)
                    ASSERT_EQ(magnitude[j], std::abs(want[j])) << what << " slot " << j;
                ++tested;
            }
        }
    }
    if (tested == 0) GTEST_SKIP() << "no instruction set here rounds blocks itself";
}

TEST(Int8Dot, RoundingAgreesWithNearbyint) {
    std::mt19937 rng(4);
    std::normal_distribution<float> d(0.0f, 3.0f);
    for (int block = 0; block < 200; ++block) {
        std::vector<float> x(int8_block);
        for (float& v : x) v = d(rng);
        std::vector<int8_t> q(int8_block);
        const float scale = round_to_int8(x.data(), int8_block, q.data());
        float max_abs = 0;
        for (float v : x) max_abs = std::max(max_abs, std::fabs(v));
        ASSERT_EQ(scale, max_abs / 127.0f);
        for (int64_t i = 0; i < int8_block; ++i) {
            ASSERT_EQ(q[i], std::nearbyint(x[i] * (127.0f / max_abs))) << x[i];
        }
    }
}

TEST(Int8Dot, TablesRoundWithinHalfAStep) {
    std::mt19937 rng(3);
    for (int nbits : {4, 6}) {
        const auto q = int8_matrix(rng, {QuantKind::lut, nbits, 8}, 64, 128);
        const int64_t n = int64_t{1} << nbits;
        for (int64_t g = 0; g < q.n_tables(); ++g) {
            const float s = q.int8_dot->dot_scale[g];
            int max_entry = 0;
            for (int64_t e = 0; e < n; ++e) {
                const float t = f16_to_f32(q.lut[g * n + e]);
                const int8_t c = q.int8_dot->dot_lut[g * n + e];
                EXPECT_LE(std::fabs(t - s * c), s * 0.5f * (1 + 1e-5f)) << nbits << " " << g;
                max_entry = std::max(max_entry, std::abs(int{c}));
            }
            EXPECT_EQ(max_entry, int8_table_limit(nbits));
        }
    }
}

TEST(Int8Dot, SimdLeavesMatchTheScalarReference) {
    std::mt19937 rng(11);
    ThreadPool pool(2);
    int n_leaves = 0;
    for (const Format& f : int8_formats) {
        for (const auto& [n_out, n_in] :
             {std::pair<int64_t, int64_t>{8, 128}, {37, 256}, {72, 1152}}) {
            auto q = int8_matrix(rng, f, n_out, n_in);
            ASSERT_TRUE(int8_dot_applies(q.view()));
            QuantMatrix exact = q.view();
            exact.int8_dot = false;
            // Up to 16 tokens the gemv leaves, beyond the GEMM leaves (tile
            // tails of rows and tokens included).
            for (int64_t n_tokens : {1, 3, 16, 17, 40}) {
                const auto x = random_x(rng, n_tokens * n_in);
                const auto want = product(q.view(), x, n_tokens, nullptr, pool);
                for (const QuantIsa* isa : quant_available()) {
                    q.use_int8_dot(isa);
                    const bool has_leaf = n_tokens <= quant_gemv_max_tokens
                                              ? isa->gemv_int8 != nullptr
                                              : isa->gemm_int8 != nullptr;
                    if (!has_leaf) {
                        EXPECT_EQ(product(q.view(), x, n_tokens, isa, pool),
                                  product(exact, x, n_tokens, isa, pool))
                            << describe(q, n_tokens, isa->name) << ": the exact path";
                        continue;
                    }
                    ++n_leaves;
                    const auto got = product(q.view(), x, n_tokens, isa, pool);
                    // Blocks are exact in integers; f32 rounding scales with sum |x w|.
                    for (int64_t o = 0; o < n_out; ++o) {
                        const auto w = int8_row(q.view(), o);
                        for (int64_t t = 0; t < n_tokens; ++t) {
                            double abs_sum = 0;
                            for (int64_t i = 0; i < n_in; ++i)
                                abs_sum += std::fabs(x[t * n_in + i] * w[i]);
                            const size_t k = static_cast<size_t>(t * n_out + o);
                            ASSERT_NEAR(got[k], want[k], 1e-5 * abs_sum)
                                << describe(q, n_tokens, isa->name) << " t " << t << " o " << o;
                        }
                    }
                }
            }
        }
    }
    if (n_leaves == 0) GTEST_SKIP() << "no integer dot product leaves on this processor";
}

// Tokens whose every block holds integers up to 127 times a power of two,
// one of them at 127: each block rounds to those integers with d that power,
// so that the products' sums are exact in f32 in any order and the leaves
// must give the reference's very floats. One block of token 1 holds a NaN.
std::vector<float> exactly_rounded_x(std::mt19937& rng, int64_t n_tokens, int64_t n_in) {
    std::uniform_int_distribution<int> value(-127, 127);
    std::vector<float> x(static_cast<size_t>(n_tokens * n_in));
    for (int64_t t = 0; t < n_tokens; ++t) {
        const float d = std::ldexp(1.0f, -static_cast<int>(t % 5));
        for (int64_t i = 0; i < n_in; ++i) {
            const int q = i % int8_block == t % int8_block ? (t % 2 ? -127 : 127) : value(rng);
            x[static_cast<size_t>(t * n_in + i)] = static_cast<float>(q) * d;
        }
    }
    x[static_cast<size_t>(n_in + n_in / 2)] = NAN;
    return x;
}

// Prompts past quant_gemv_max_tokens on the x86 leaves (the GEMM of tiles of
// rows): the reference's integer sums for every code kind, token counts not
// a multiple of any tile's, row counts not a multiple of a tile or a task.
TEST(Int8Dot, GemmLeavesSumAsTheReference) {
    std::mt19937 rng(15);
    ThreadPool pool(2);
    int n_leaves = 0;
    for (const Format& f : int8_formats) {
        for (const auto& [n_out, n_in] : {std::pair<int64_t, int64_t>{37, 384}, {100, 128}}) {
            auto q = int8_matrix(rng, f, n_out, n_in);
            for (int64_t n_tokens : {17, 23, 40}) {
                const auto x = exactly_rounded_x(rng, n_tokens, n_in);
                const auto want = product(q.view(), x, n_tokens, nullptr, pool);
                for (const QuantIsa* isa : quant_available()) {
                    if (!isa->gemm_int8) {
                        EXPECT_FALSE(std::string(isa->name).starts_with("avx"))
                            << isa->name << " has no integer GEMM";
                        continue;
                    }
                    ++n_leaves;
                    q.use_int8_dot(isa);
                    const auto got = product(q.view(), x, n_tokens, isa, pool);
                    for (size_t k = 0; k < got.size(); ++k) {
                        const bool nan_token = k / static_cast<size_t>(n_out) == 1;
                        if (nan_token) {
                            ASSERT_TRUE(std::isnan(got[k]) && std::isnan(want[k]))
                                << describe(q, n_tokens, isa->name) << " at " << k;
                        } else {
                            ASSERT_EQ(got[k], want[k])
                                << describe(q, n_tokens, isa->name) << " at " << k;
                        }
                    }
                }
            }
        }
    }
    if (n_leaves == 0) GTEST_SKIP() << "no integer GEMM leaves on this processor";
}

// Every entry at the table's limit against every input at 127, of either
// sign, in every pair: the largest sums a leaf's 16-bit pairs see (AVX2 takes
// 4-bit entries offset by 64, so a larger limit would saturate them).
TEST(Int8Dot, LargestEntriesAndInputsDoNotSaturate) {
    std::mt19937 rng(13);
    ThreadPool pool(2);
    for (const Format& f : int8_formats) {
        if (f.kind != QuantKind::lut) continue;
        auto q = test::random_quantized(rng, f.kind, f.nbits, 24, 256, f.group);
        for (size_t e = 0; e < q.lut.size(); ++e) q.lut[e] = f32_to_f16(e % 2 ? -0.5f : 0.5f);
        // Two tokens through the matrix-vector leaves, 17 through the GEMM.
        for (int64_t n_tokens : {2, 17}) {
            std::vector<float> x(static_cast<size_t>(n_tokens * q.n_in));
            for (size_t i = 0; i < x.size(); ++i) x[i] = i / q.n_in % 2 ? -3.0f : 3.0f;
            for (const QuantIsa* isa : quant_available()) {
                q.use_int8_dot(isa);
                QuantMatrix exact = q.view();
                exact.int8_dot = false;
                // Entries and inputs round to their grids' ends: the products are
                // the exact ones but for f32 rounding (a saturated pair would be
                // off by thousands of steps).
                const auto got = product(q.view(), x, n_tokens, isa, pool);
                const auto want = product(exact, x, n_tokens, isa, pool);
                for (size_t k = 0; k < got.size(); ++k)
                    ASSERT_NEAR(got[k], want[k], 1e-5 * 0.5 * 3.0 * q.n_in)
                        << describe(q, n_tokens, isa->name) << " at " << k;
            }
        }
    }
}

// Rounding x (|x - d q| <= d / 2) and the tables (|t - s c| <= s / 2) bounds
// each product's distance from the exact one.
TEST(Int8Dot, WithinTheRoundingBoundOfTheExactProduct) {
    std::mt19937 rng(12);
    ThreadPool pool(2);
    for (const Format& f : int8_formats) {
        const auto q = int8_matrix(rng, f, 40, 384);
        QuantMatrix exact = q.view();
        exact.int8_dot = false;
        const auto x = random_x(rng, 2 * q.n_in);
        const auto got = product(q.view(), x, 2, quant_active(), pool);
        const auto want = product(exact, x, 2, quant_active(), pool);
        std::vector<float> row(static_cast<size_t>(q.n_in));
        bool any_differs = false;
        for (int64_t o = 0; o < q.n_out; ++o) {
            ref::quant_decode_row(exact, o, 0, q.n_in, row.data());
            const auto rounded = int8_row(q.view(), o);
            for (int64_t t = 0; t < 2; ++t) {
                double bound = 0;
                for (int64_t b = 0; b < q.n_in; b += int8_block) {
                    const float* xb = x.data() + t * q.n_in + b;
                    const double d = *std::max_element(xb, xb + int8_block, [](float a, float c) {
                        return std::fabs(a) < std::fabs(c);
                    });
                    for (int64_t i = 0; i < int8_block; ++i) {
                        bound += std::fabs(xb[i]) * std::fabs(row[b + i] - rounded[b + i]) +
                                 std::fabs(rounded[b + i]) * std::fabs(d) / 127.0 / 2;
                    }
                }
                const size_t k = static_cast<size_t>(t * q.n_out + o);
                EXPECT_LE(std::fabs(got[k] - want[k]), bound * 1.001 + 1e-6)
                    << describe(q, 2, "") << " o " << o;
                any_differs |= got[k] != want[k];
            }
        }
        EXPECT_TRUE(any_differs) << describe(q, 2, "") << ": the exact path was taken";
    }
}

// Leaves that read 6-bit codes in another layout than the matrix holds take
// the exact path rather than misreading the codes.
TEST(Int8Dot, CodesInAnotherLayoutTakeTheExactPath) {
    std::mt19937 rng(14);
    ThreadPool pool(2);
    auto q = int8_matrix(rng, {QuantKind::lut, 6, 8}, 24, 256);
    q.use_int8_dot(nullptr);
    QuantMatrix exact = q.view();
    exact.int8_dot = false;
    const auto x = random_x(rng, 2 * q.n_in);
    int n_leaves = 0;
    for (const QuantIsa* isa : quant_available()) {
        if (int8_layout_for(*isa, q.view()) == Int8Layout::packed) continue;
        ++n_leaves;
        EXPECT_EQ(product(q.view(), x, 2, isa, pool), product(exact, x, 2, isa, pool)) << isa->name;
        q.use_int8_dot(isa);
        EXPECT_NE(product(q.view(), x, 2, isa, pool), product(exact, x, 2, isa, pool))
            << isa->name << ": its own layout takes the integer leaves";
        q.use_int8_dot(nullptr);
    }
    if (n_leaves == 0) GTEST_SKIP() << "every instruction set here reads 6-bit codes packed";
}

TEST(Int8Dot, OtherShapesAndWidthsKeepTheExactPath) {
    std::mt19937 rng(13);
    ThreadPool pool(2);
    struct Case {
        Format f;
        int64_t n_in, n_tokens;
    };
    // A partial block, a width without integer leaves.
    for (const Case& c :
         {Case{{QuantKind::lut, 4, 8}, 200, 1}, Case{{QuantKind::lut, 3, 8}, 256, 1},
          Case{{QuantKind::int8, 8, 0}, 200, 17}}) {
        const auto q = int8_matrix(rng, c.f, 24, c.n_in);
        EXPECT_FALSE(int8_dot_applies(q.view()));
        QuantMatrix exact = q.view();
        exact.int8_dot = false;
        const auto x = random_x(rng, c.n_tokens * c.n_in);
        for (const QuantIsa* isa : quant_available()) {
            EXPECT_EQ(product(q.view(), x, c.n_tokens, isa, pool),
                      product(exact, x, c.n_tokens, isa, pool))
                << describe(q, c.n_tokens, isa->name);
        }
        EXPECT_EQ(product(q.view(), x, c.n_tokens, nullptr, pool),
                  product(exact, x, c.n_tokens, nullptr, pool));
    }
}

}  // namespace
}  // namespace anelm::kernels
