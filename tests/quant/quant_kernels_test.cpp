#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "kernels/kernels.h"
#include "kernels/quant_isa.h"
#include "kernels/quant_kernels.h"
#include "quant/quant_testing.h"

namespace anelm::kernels {
namespace {

using Format = test::QuantFormat;
using test::describe;

const Format formats[] = {
    {QuantKind::lut, 1, 8},  {QuantKind::lut, 2, 8},  {QuantKind::lut, 2, 3},
    {QuantKind::lut, 3, 4},  {QuantKind::lut, 4, 8},  {QuantKind::lut, 4, 1},
    {QuantKind::lut, 6, 8},  {QuantKind::lut, 8, 16}, {QuantKind::int8, 8, 0},
    {QuantKind::int4, 4, 0},
};

std::vector<float> random_x(std::mt19937& rng, int64_t n) {
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) v = d(rng);
    return x;
}

// Each output within tol of the double-precision sum over the dequantized
// weights, relative to the sum of |x| |w| (the scale of rounding error).
void expect_matches_dequantized(const quant::QuantizedMatrix& q, const std::vector<float>& x,
                                int64_t n_tokens, const std::vector<float>& y, double tol,
                                const char* isa = "") {
    std::vector<float> row(static_cast<size_t>(q.n_in));
    for (int64_t o = 0; o < q.n_out; ++o) {
        ref::quant_decode_row(q.view(), o, 0, q.n_in, row.data());
        for (int64_t t = 0; t < n_tokens; ++t) {
            double sum = 0, abs_sum = 0;
            for (int64_t i = 0; i < q.n_in; ++i) {
                const double p = double{x[t * q.n_in + i]} * row[i];
                sum += p;
                abs_sum += std::fabs(p);
            }
            ASSERT_NEAR(y[t * q.n_out + o], sum, tol * abs_sum + 1e-30)
                << describe(q, n_tokens, isa) << " at t " << t << " o " << o;
        }
    }
}

class ScalarGuard {
public:
    explicit ScalarGuard(bool on) { force_scalar(on); }
    ~ScalarGuard() { force_scalar(false); }
};

std::vector<float> run(const quant::QuantizedMatrix& q, const std::vector<float>& x,
                       int64_t n_tokens, bool scalar, ThreadPool& pool) {
    ScalarGuard guard(scalar);
    std::vector<float> y(static_cast<size_t>(n_tokens * q.n_out), NAN);
    quant_matmul(q.view(), x.data(), n_tokens, y.data(), pool);
    return y;
}

std::vector<float> run(const QuantIsa& isa, const quant::QuantizedMatrix& q,
                       const std::vector<float>& x, int64_t n_tokens, ThreadPool& pool) {
    std::vector<float> y(static_cast<size_t>(n_tokens * q.n_out), NAN);
    quant_matmul(isa, q.view(), x.data(), n_tokens, y.data(), pool);
    return y;
}

TEST(QuantMatmul, SimdMatchesScalarAndDequantizedOnOddShapes) {
    std::mt19937 rng(7);
    ThreadPool pool(2);
    // n_in: below one block, whole 64-blocks, blocks plus odd tails.
    const int64_t shapes[][2] = {{8, 5}, {16, 64},     {24, 131}, {40, 200},
                                 {8, 1}, {33 * 8, 71}, {16, 1000}};
    for (const Format& f : formats) {
        for (const auto& shape : shapes) {
            // Three rows more: a LUT's last group holds fewer rows than the others.
            const int64_t n_out = shape[0] + 3, n_in = shape[1];
            const auto q = test::random_quantized(rng, f.kind, f.nbits, n_out, n_in, f.group);
            for (int64_t n_tokens : {1, 2, 3, 4, 5, 9, 21}) {
                const auto x = random_x(rng, n_tokens * n_in);
                const auto simd = run(q, x, n_tokens, false, pool);
                const auto scalar = run(q, x, n_tokens, true, pool);
                expect_matches_dequantized(q, x, n_tokens, simd, 1e-5);
                expect_matches_dequantized(q, x, n_tokens, scalar, 1e-5);
                for (const QuantIsa* isa : quant_available()) {
                    expect_matches_dequantized(q, x, n_tokens, run(*isa, q, x, n_tokens, pool),
                                               1e-5, isa->name);
                }
            }
        }
    }
}

TEST(QuantMatmul, ManyTokensOverSeveralRowBlocks) {
    // Long rows: the GEMM path decodes the matrix in several blocks of rows.
    std::mt19937 rng(10);
    ThreadPool pool(2);
    for (const Format& f : {formats[3], formats[7]}) {
        const auto q = test::random_quantized(rng, f.kind, f.nbits, 136, 8200, f.group);
        const auto x = random_x(rng, 17 * q.n_in);
        for (const QuantIsa* isa : quant_available()) {
            expect_matches_dequantized(q, x, 17, run(*isa, q, x, 17, pool), 1e-5, isa->name);
        }
    }
}

TEST(QuantMatmul, DecodeRowMatchesScalarFromAnyStart) {
    std::mt19937 rng(8);
    for (const Format& f : formats) {
        const auto q = test::random_quantized(rng, f.kind, f.nbits, 16, 77, f.group);
        for (int64_t o : {0, 5, 15}) {
            for (int64_t k0 : {0, 3, 8, 40}) {
                const int64_t n = q.n_in - k0;
                // One more than decoded: nothing may be written past the end.
                std::vector<float> got(static_cast<size_t>(n) + 1), want(static_cast<size_t>(n));
                ref::quant_decode_row(q.view(), o, k0, n, want.data());
                for (const QuantIsa* isa : quant_available()) {
                    for (int64_t len : {n, n - 1, std::min<int64_t>(n, 5)}) {
                        std::fill(got.begin(), got.end(), NAN);
                        isa->decode_row(q.view(), o, k0, len, got.data());
                        EXPECT_TRUE(std::equal(want.begin(), want.begin() + len, got.begin()))
                            << describe(q, 1, isa->name) << " o " << o << " k0 " << k0;
                        EXPECT_TRUE(std::isnan(got[static_cast<size_t>(len)]))
                            << describe(q, 1, isa->name) << " wrote past " << len;
                    }
                }
            }
        }
    }
}

TEST(QuantMatmul, ActiveLeavesAreAmongTheAvailable) {
    const auto tables = quant_available();
    const QuantIsa* active = quant_active();
    EXPECT_EQ(active != nullptr, std::find(tables.begin(), tables.end(), active) != tables.end());
    EXPECT_EQ(active, tables.empty() ? nullptr : tables.front());
}

TEST(QuantMatmul, EmptyShapes) {
    std::mt19937 rng(9);
    ThreadPool pool(2);
    const auto q = test::random_quantized(rng, QuantKind::lut, 4, 8, 0, 8);
    std::vector<float> y(16, NAN);
    quant_matmul(q.view(), nullptr, 2, y.data(), pool);
    for (float v : y) EXPECT_EQ(v, 0.0f);
}

TEST(QuantMatmul, RejectsBadMatrices) {
    ThreadPool pool(1);
    QuantMatrix w;
    w.n_out = w.n_in = 8;
    std::vector<uint8_t> codes(64);
    std::vector<uint16_t> table(16 << 3);
    w.codes = codes.data();
    w.lut = table.data();
    w.nbits = 5;
    EXPECT_THROW(check_quant_matrix(w), Error);
    w.nbits = 4;
    w.group = 0;
    EXPECT_THROW(check_quant_matrix(w), Error);
    w.group = 8;
    EXPECT_NO_THROW(check_quant_matrix(w));
    w.kind = QuantKind::int8;
    EXPECT_THROW(check_quant_matrix(w), Error);  // 4-bit codes, no scales
}

}  // namespace
}  // namespace anelm::kernels
