// Products of ggml block-quantized weights (block_kernels.h): the rounding of
// the activations, the scalar reference against exact products of the
// dequantized weights (io/ggml_types.h), and every instruction set's leaves
// against the reference.
#include "kernels/block_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/half.h"
#include "io/ggml_types.h"
#include "kernels/block_isa.h"
#include "kernels/block_testing.h"
#include "kernels/kernel_testing.h"

namespace anelm::kernels {
namespace {

using test::BlockTypeCase;

bool k_type(BlockType t) {
    return block_layout(t).elems == 256;
}

// A weight of random blocks (test::random_blocks) and its dequantization.
struct Weight {
    std::vector<uint8_t> bytes;
    std::vector<float> dense;  // [n_out, n_in], as ggml dequantizes it
    BlockMatrix w;
};

Weight random_weight(std::mt19937& rng, const BlockTypeCase& c, int64_t n_out, int64_t n_in) {
    const BlockLayout l = block_layout(c.type);
    Weight m;
    m.bytes = test::random_blocks(rng, c, n_out, n_in);
    m.w = {c.type, n_out, n_in, m.bytes.data(), n_in / l.elems * l.bytes};
    m.dense.resize(static_cast<size_t>(n_out * n_in));
    for (int64_t o = 0; o < n_out; ++o) {
        dequantize_row(static_cast<GgmlType>(c.type),
                       reinterpret_cast<const std::byte*>(m.bytes.data() + o * m.w.row_bytes),
                       m.dense.data() + o * n_in, n_in);
    }
    return m;
}

// The activations as round_token leaves them, dequantized: x̂_i = d_b q_i.
std::vector<float> rounded(BlockType type, const std::vector<float>& x, int64_t n_in) {
    const ActFormat f = act_format(type);
    const int64_t len = act_block(f);
    std::vector<int8_t> q(static_cast<size_t>(n_in));
    std::vector<float> d(static_cast<size_t>(n_in / len)), s(d.size());
    std::vector<int16_t> bsums(static_cast<size_t>(n_in / act_sum_len));
    std::vector<float> out(x.size());
    for (size_t t = 0; t < x.size() / static_cast<size_t>(n_in); ++t) {
        round_token(f, x.data() + t * n_in, n_in, q.data(), d.data(), s.data(), bsums.data());
        for (int64_t i = 0; i < n_in; ++i) out[t * n_in + i] = d[i / len] * q[i];
    }
    return out;
}

std::string describe(const BlockTypeCase& c, int64_t n_out, int64_t n_in, int64_t n_tokens) {
    return std::string(c.name) + " [" + std::to_string(n_out) + ", " + std::to_string(n_in) +
           "] tokens " + std::to_string(n_tokens);
}

// Inputs of a row of each test: two or three blocks of the type, up to 24.
std::vector<int64_t> test_widths(BlockType t) {
    return k_type(t) ? std::vector<int64_t>{256, 768} : std::vector<int64_t>{96, 512, 768};
}

TEST(BlockKernels, LayoutsAreGgmls) {
    for (const BlockTypeCase& c : test::block_type_cases()) {
        const auto info = ggml_type_info(static_cast<uint32_t>(c.type));
        ASSERT_TRUE(info.has_value()) << c.name;
        EXPECT_EQ(info->name, c.name);
        EXPECT_EQ(block_layout(c.type).elems, info->block_elems) << c.name;
        EXPECT_EQ(block_layout(c.type).bytes, info->block_bytes) << c.name;
        EXPECT_TRUE(block_type_supported(static_cast<uint32_t>(c.type))) << c.name;
    }
    for (uint32_t id : {0u, 1u, 9u, 15u, 16u, 23u, 30u, 99u})
        EXPECT_FALSE(block_type_supported(id));
    EXPECT_THROW(block_layout(static_cast<BlockType>(15)), Error);
}

TEST(BlockKernels, ActivationFormatsAreLlamaCpps) {
    EXPECT_EQ(act_format(BlockType::q4_0), ActFormat::q8_0);
    EXPECT_EQ(act_format(BlockType::q5_0), ActFormat::q8_0);
    EXPECT_EQ(act_format(BlockType::q8_0), ActFormat::q8_0);
    EXPECT_EQ(act_format(BlockType::iq4_nl), ActFormat::q8_0);
    EXPECT_EQ(act_format(BlockType::q4_1), ActFormat::q8_1);
    EXPECT_EQ(act_format(BlockType::q5_1), ActFormat::q8_1);
    for (BlockType t :
         {BlockType::q2_k, BlockType::q3_k, BlockType::q4_k, BlockType::q5_k, BlockType::q6_k})
        EXPECT_EQ(act_format(t), ActFormat::q8_k);
}

// q8_0/q8_1: d = max |x| / 127 kept as f16, q = x * (127 / max) to nearest,
// ties to even; q8_1's s is f16 of the unrounded d times the sum of q.
TEST(BlockKernels, RoundsQ8_0AndQ8_1AsLlamaCppsX86) {
    std::vector<float> x(64, 0.0f);
    x[0] = 127.0f;  // max: d = 1, q = x
    x[1] = 2.5f;    // a tie: to 2
    x[2] = -3.5f;   // a tie: to -4
    x[3] = 0.75f;
    x[32] = -0.1f;  // the second block: only negative values
    x[33] = 0.05f;
    std::vector<int8_t> q(64);
    std::vector<float> d(2), s(2);
    round_token(ActFormat::q8_1, x.data(), 64, q.data(), d.data(), s.data(), nullptr);
    EXPECT_EQ(d[0], 1.0f);
    EXPECT_EQ(q[0], 127);
    EXPECT_EQ(q[1], 2);
    EXPECT_EQ(q[2], -4);
    EXPECT_EQ(q[3], 1);
    EXPECT_EQ(s[0], 126.0f);
    const float d1 = 0.1f / 127.0f;
    EXPECT_EQ(d[1], f16_to_f32(f32_to_f16(d1)));
    EXPECT_EQ(q[32], -127);
    EXPECT_EQ(q[33], static_cast<int8_t>(std::nearbyint(0.05f * (127.0f / 0.1f))));
    EXPECT_EQ(s[1], f16_to_f32(f32_to_f16(d1 * static_cast<float>(q[32] + q[33]))));
    // A block of zeros has d = 0 and q = 0.
    std::vector<float> zeros(32, 0.0f);
    round_token(ActFormat::q8_0, zeros.data(), 32, q.data(), d.data(), nullptr, nullptr);
    EXPECT_EQ(d[0], 0.0f);
    EXPECT_EQ(q[5], 0);
}

// q8_K: the value of largest magnitude (the first of equals) rounds to -127,
// d = max / -127 in f32; q is at most 127; bsums are the sums of 16.
TEST(BlockKernels, RoundsQ8_KAsLlamaCppsReference) {
    std::mt19937 rng(3);
    std::vector<float> x = test::random_floats(rng, 256);
    x[17] = -2.0f;
    x[200] = 2.0f;  // equal magnitude, later: the sign of x[17] wins
    std::vector<int8_t> q(256);
    float d = 0.0f;
    std::vector<int16_t> bsums(16);
    round_token(ActFormat::q8_k, x.data(), 256, q.data(), &d, nullptr, bsums.data());
    EXPECT_EQ(d, 1.0f / (-127.0f / -2.0f));
    EXPECT_EQ(q[17], -127);
    EXPECT_EQ(q[200], 127);
    for (int g = 0; g < 16; ++g) {
        int sum = 0;
        for (int j = 0; j < 16; ++j) sum += q[16 * g + j];
        EXPECT_EQ(bsums[g], sum);
    }
    for (int i = 0; i < 256; ++i) {
        const float want = std::nearbyint(-127.0f / -2.0f * x[i]);
        EXPECT_EQ(q[i], static_cast<int8_t>(std::min(127.0f, want))) << i;
    }
}

// Each input moves by at most half a step of its block, plus (q8_0, q8_1) the
// rounding of d to f16: |x - d q| <= max / 254 + 2^-11 (|x| + max / 254).
TEST(BlockKernels, RoundingErrorIsHalfAStep) {
    std::mt19937 rng(4);
    for (ActFormat f : {ActFormat::q8_0, ActFormat::q8_k}) {
        const BlockType t = f == ActFormat::q8_k ? BlockType::q4_k : BlockType::q8_0;
        const int64_t n_in = 1024, len = act_block(f);
        std::vector<float> x = test::random_floats(rng, n_in, -3.0f, 3.0f);
        for (int64_t i = 0; i < n_in; i += 7) x[i] *= 1e-3f;  // small values among large
        const std::vector<float> xr = rounded(t, x, n_in);
        for (int64_t b = 0; b < n_in / len; ++b) {
            float amax = 0.0f;
            for (int64_t i = b * len; i < (b + 1) * len; ++i)
                amax = std::max(amax, std::fabs(x[i]));
            for (int64_t i = b * len; i < (b + 1) * len; ++i) {
                const float step = amax / 254.0f;
                EXPECT_LE(std::fabs(x[i] - xr[i]), step + 0x1p-11f * (std::fabs(x[i]) + step)) << i;
            }
        }
    }
}

// Every table's rounding (BlockIsa::round) is round_token's, bit for bit:
// ties, zeros, infinities and NaN, equal magnitudes of both signs, scales
// that overflow f16 or fall to its subnormals.
TEST(BlockKernels, SimdRoundingIsTheReferences) {
    std::mt19937 rng(9);
    const int64_t n_in = 256 * 8;
    std::vector<float> x = test::random_floats(rng, n_in, -2.0f, 2.0f);
    for (int64_t i = 0; i < 32; ++i) x[i] = static_cast<float>(i % 7) - 3.5f;  // ties at d = 1
    x[0] = 127.0f;
    std::fill(x.begin() + 256, x.begin() + 512, 0.0f);  // a zero block
    x[600] = INFINITY;
    x[900] = NAN;
    x[1030] = -1e30f;                                     // d overflows f16
    for (int64_t i = 1280; i < 1536; ++i) x[i] *= 1e-6f;  // d an f16 subnormal
    x[1600] = -5.0f;
    x[1605] = 5.0f;  // the first of equal magnitudes is negative, in one vector
    x[1800] = -4.0f;
    x[1900] = 4.0f;  // and in two
    std::vector<const BlockIsa*> tables = block_available();
    int n_tables = 0;
    for (const BlockIsa* isa : tables) {
        if (!isa->round) continue;
        ++n_tables;
        for (ActFormat f : {ActFormat::q8_0, ActFormat::q8_1, ActFormat::q8_k}) {
            const int64_t n_blocks = n_in / act_block(f), n_sums = n_in / act_sum_len;
            std::vector<int8_t> q(n_in, 1), q_ref(n_in, 2);
            std::vector<float> d(n_blocks, 1), d_ref(n_blocks, 2), s(n_blocks, 1),
                s_ref(n_blocks, 2);
            std::vector<int16_t> bsums(n_sums, 1), bsums_ref(n_sums, 2);
            isa->round(f, x.data(), n_in, q.data(), d.data(), s.data(), bsums.data());
            round_token(f, x.data(), n_in, q_ref.data(), d_ref.data(), s_ref.data(),
                        bsums_ref.data());
            const std::string what =
                std::string(isa->name) + " format " + std::to_string(static_cast<int>(f));
            EXPECT_EQ(q, q_ref) << what;
            for (int64_t b = 0; b < n_blocks; ++b) {
                EXPECT_TRUE(d[b] == d_ref[b] || (std::isnan(d[b]) && std::isnan(d_ref[b])))
                    << what << " block " << b << ": " << d[b] << " vs " << d_ref[b];
                if (f == ActFormat::q8_1) {
                    EXPECT_TRUE(s[b] == s_ref[b] || (std::isnan(s[b]) && std::isnan(s_ref[b])))
                        << what << " block " << b;
                }
            }
            if (f == ActFormat::q8_k) {
                EXPECT_EQ(bsums, bsums_ref) << what;
            }
        }
    }
    if (n_tables == 0) GTEST_SKIP() << "no SIMD rounding on this processor";
}

// The reference against the exact product of the dequantized weights with the
// unrounded inputs. Per output the error is the weights times the rounding of
// the inputs, sum |w_i| |x_i - x̂_i| (the test's own x̂, bounded above), plus
// float rounding of the sums: 2^-16 of sum |w_i x_i| covers every block's
// f32 scaling and additions (each relative 2^-24, a few dozen of them, and
// the cancellation of Q*_K's mins against the scaled codes); Q4_1/Q5_1 add
// the f16 rounding of q8_1's sum (2^-11 relative, times m), within 2^-8.
// With uniform inputs the norm-wise error is about half a step over the
// typical input, 1/254 / (1/2): below 1e-2.
TEST(BlockKernels, ReferenceIsTheExactProductOfRoundedInputs) {
    std::mt19937 rng(5);
    ThreadPool pool(2);
    for (const BlockTypeCase& c : test::block_type_cases()) {
        for (int64_t n_in : test_widths(c.type)) {
            const int64_t n_out = 13, n_tokens = 3;
            const Weight m = random_weight(rng, c, n_out, n_in);
            const std::vector<float> x = test::random_floats(rng, n_tokens * n_in);
            const std::vector<float> xr = rounded(c.type, x, n_in);
            std::vector<float> y(static_cast<size_t>(n_tokens * n_out));
            ref::block_matmul(m.w, x.data(), n_tokens, y.data(), pool);
            const double float_part = act_format(c.type) == ActFormat::q8_1 ? 0x1p-8 : 0x1p-16;
            double err2 = 0.0, norm2 = 0.0;
            for (int64_t t = 0; t < n_tokens; ++t) {
                for (int64_t o = 0; o < n_out; ++o) {
                    double exact = 0.0, rounding = 0.0, size = 0.0;
                    for (int64_t i = 0; i < n_in; ++i) {
                        const double wi = m.dense[o * n_in + i], xi = x[t * n_in + i];
                        exact += wi * xi;
                        rounding += std::fabs(wi) * std::fabs(xi - xr[t * n_in + i]);
                        size += std::fabs(wi * xi);
                    }
                    const double got = y[t * n_out + o];
                    EXPECT_LE(std::fabs(got - exact), rounding + float_part * size)
                        << describe(c, n_out, n_in, n_tokens) << " at " << t << ", " << o;
                    err2 += (got - exact) * (got - exact);
                    norm2 += exact * exact;
                }
            }
            EXPECT_LT(std::sqrt(err2 / norm2), 1e-2) << describe(c, n_out, n_in, n_tokens);
        }
    }
}

// Inputs that rounding leaves as they are: in each block integers |q| <= 127
// times a power of two, one of them +-127 (so that d is the power of two,
// exact in f16, and q8_K's 127 / max is exact too). Then the only errors are
// the f32 scalings and additions, at most 2^-18 of sum |w_i x_i| here, while
// a single product off by one in a block's integer sum would move the result
// by |d_w d_x| times a scale, about 3e-4 of that sum with these small q.
TEST(BlockKernels, IntegerSumsAreExact) {
    std::mt19937 rng(6);
    ThreadPool pool(2);
    std::uniform_int_distribution<int> small(-3, 3), power(-8, 2);
    for (const BlockTypeCase& c : test::block_type_cases()) {
        const int64_t n_out = 11, n_tokens = 2, n_in = 512;
        const int64_t len = act_block(act_format(c.type));
        const Weight m = random_weight(rng, c, n_out, n_in);
        std::vector<float> x(static_cast<size_t>(n_tokens * n_in));
        for (int64_t b = 0; b < n_tokens * n_in / len; ++b) {
            const float scale = std::ldexp(1.0f, power(rng));
            const int64_t peak = b * len + static_cast<int64_t>(rng() % len);
            for (int64_t i = b * len; i < (b + 1) * len; ++i)
                x[i] =
                    scale * static_cast<float>(i == peak ? (rng() % 2 ? 127 : -127) : small(rng));
        }
        ASSERT_EQ(rounded(c.type, x, n_in), x) << c.name;
        std::vector<float> y(static_cast<size_t>(n_tokens * n_out));
        ref::block_matmul(m.w, x.data(), n_tokens, y.data(), pool);
        for (int64_t t = 0; t < n_tokens; ++t) {
            for (int64_t o = 0; o < n_out; ++o) {
                double exact = 0.0, size = 0.0;
                for (int64_t i = 0; i < n_in; ++i) {
                    const double p = double{m.dense[o * n_in + i]} * x[t * n_in + i];
                    exact += p;
                    size += std::fabs(p);
                }
                EXPECT_NEAR(y[t * n_out + o], exact, 0x1p-18 * size)
                    << describe(c, n_out, n_in, n_tokens) << " at " << t << ", " << o;
            }
        }
    }
}

// block_matmul (threads, splits, passes, each instruction set's leaves)
// against the reference: the same integer sums, so they differ only by the
// order of float additions (seen: 2^-23 of sum |w_i x_i|; allowed: 2^-20,
// where one product off by one in a block's integer sum would move a result
// by about 2^-13 of it); the scalar leaves are the reference's own sums,
// equal bit for bit.
TEST(BlockKernels, LeavesMatchTheReference) {
    std::mt19937 rng(7);
    ThreadPool pool(2);
    test::for_each_isa([&](const char* isa) {
        const bool scalar = std::string(isa) == "scalar";
        for (const BlockTypeCase& c : test::block_type_cases()) {
            for (int64_t n_in : test_widths(c.type)) {
                const int64_t n_out = 37;
                const Weight m = random_weight(rng, c, n_out, n_in);
                for (int64_t n_tokens : {1, 2, 3, 5, 17, 40, 64}) {
                    const std::vector<float> x = test::random_floats(rng, n_tokens * n_in);
                    std::vector<float> want(static_cast<size_t>(n_tokens * n_out));
                    std::vector<float> got(want.size(), NAN);
                    ref::block_matmul(m.w, x.data(), n_tokens, want.data(), pool);
                    block_matmul(m.w, x.data(), n_tokens, got.data(), pool);
                    if (scalar) {
                        ASSERT_EQ(got, want) << describe(c, n_out, n_in, n_tokens);
                        continue;
                    }
                    for (int64_t t = 0; t < n_tokens; ++t) {
                        for (int64_t o = 0; o < n_out; ++o) {
                            double size = 0.0;
                            for (int64_t i = 0; i < n_in; ++i)
                                size += std::fabs(double{m.dense[o * n_in + i]} * x[t * n_in + i]);
                            ASSERT_NEAR(got[t * n_out + o], want[t * n_out + o], 0x1p-20 * size)
                                << describe(c, n_out, n_in, n_tokens) << " at " << t << ", " << o;
                        }
                    }
                }
            }
        }
    });
}

// Larger shapes through every table of leaves this processor has, one, a
// few and many tokens: the splits' long runs of rows and their tails, and the
// GEMM leaves' tiles.
TEST(BlockKernels, EveryTableMatchesTheReferenceOnLongRows) {
    std::mt19937 rng(8);
    ThreadPool pool(2);
    for (const BlockTypeCase& c : test::block_type_cases()) {
        const int64_t n_out = 301, n_in = 2048;
        const Weight m = random_weight(rng, c, n_out, n_in);
        for (int64_t n_tokens : {1, 4, 24}) {
            const std::vector<float> x = test::random_floats(rng, n_tokens * n_in);
            std::vector<float> want(static_cast<size_t>(n_tokens * n_out));
            ref::block_matmul(m.w, x.data(), n_tokens, want.data(), pool);
            std::vector<const BlockIsa*> tables = block_available();
            tables.push_back(nullptr);
            for (const BlockIsa* isa : tables) {
                std::vector<float> got(want.size(), NAN);
                block_matmul(isa, m.w, x.data(), n_tokens, got.data(), pool);
                test::expect_close(
                    got, want, 1e-4f,
                    (describe(c, n_out, n_in, n_tokens) + " " + (isa ? isa->name : "scalar"))
                        .c_str());
            }
        }
    }
}

TEST(BlockKernels, RejectsBadShapes) {
    ThreadPool pool(1);
    std::vector<uint8_t> data(1024);
    std::vector<float> x(512), y(8);
    BlockMatrix w{BlockType::q4_k, 2, 300, data.data(), 144};  // not whole blocks
    EXPECT_THROW(block_matmul(w, x.data(), 1, y.data(), pool), Error);
    w = {BlockType::q4_k, 2, 256, data.data(), 140};  // wrong row bytes
    EXPECT_THROW(block_matmul(w, x.data(), 1, y.data(), pool), Error);
    w = {static_cast<BlockType>(9), 2, 256, data.data(), 288};  // Q8_1 weights
    EXPECT_THROW(block_matmul(w, x.data(), 1, y.data(), pool), Error);
    w = {BlockType::q8_0, 2, 0, data.data(), 0};  // no inputs: zeros
    y.assign(6, 1.0f);
    block_matmul(w, x.data(), 3, y.data(), pool);
    EXPECT_EQ(y, std::vector<float>(6, 0.0f));
}

}  // namespace
}  // namespace anelm::kernels
