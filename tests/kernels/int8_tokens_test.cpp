// The integer matrix-vector leaves for several tokens at once
// (QuantIsa::gemv_int8_tokens, and quant_matmul's passes over them) against
// the same tokens one at a time: each block's sum is exact in integers and
// each token's blocks are added in the same order, so the two agree bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "base/half.h"
#include "kernels/quant_isa.h"

namespace anelm::kernels {
namespace {

// Every kind and width with integer leaves; group 0 stands for one table.
struct Format {
    QuantKind kind;
    int nbits;
    int64_t group;
};
const Format formats[] = {{QuantKind::lut, 4, 8}, {QuantKind::lut, 4, 1},  {QuantKind::lut, 6, 8},
                          {QuantKind::lut, 6, 0}, {QuantKind::int8, 8, 0}, {QuantKind::int4, 4, 0}};

// A matrix with uniformly random codes (every code pattern) and random tables
// or scales, and the storage it points into.
struct Int8Matrix {
    std::vector<uint8_t> codes;
    std::vector<uint16_t> lut, scales;
    std::vector<int8_t> dot_lut;
    std::vector<float> dot_scale;
    std::vector<uint8_t> int8_codes;
    QuantMatrix w;
};

Int8Matrix random_matrix(std::mt19937& rng, const Format& f, int64_t n_out, int64_t n_in) {
    Int8Matrix m;
    QuantMatrix& w = m.w;
    w.kind = f.kind;
    w.nbits = f.nbits;
    w.n_out = n_out;
    w.n_in = n_in;
    w.group = f.group ? f.group : n_out;
    w.int8_dot = true;
    m.codes.resize(static_cast<size_t>(n_out * w.row_bytes()));
    for (auto& b : m.codes) b = static_cast<uint8_t>(rng());
    std::normal_distribution<float> value(0.0f, 0.05f);
    if (f.kind == QuantKind::lut) {
        const int64_t n_tables = (n_out + w.group - 1) / w.group;
        m.lut.resize(static_cast<size_t>(n_tables << f.nbits));
        for (auto& e : m.lut) e = f32_to_f16(value(rng));
        m.dot_lut.resize(m.lut.size());
        m.dot_scale.resize(static_cast<size_t>(n_tables));
        round_tables_to_int8(m.lut.data(), n_tables, f.nbits, m.dot_lut.data(), m.dot_scale.data());
        w.lut = m.lut.data();
        w.dot_lut = m.dot_lut.data();
        w.dot_scale = m.dot_scale.data();
    } else {
        m.scales.resize(static_cast<size_t>(n_out));
        for (auto& s : m.scales) s = f32_to_f16(std::fabs(value(rng)) / 64 + 1e-4f);
        w.scales = m.scales.data();
    }
    w.codes = m.codes.data();
    return m;
}

// m's matrix with its codes laid out as the integer leaves of isa read them
// (the scalar reference's for null), the copy kept in m.
QuantMatrix laid_out_for(Int8Matrix& m, const QuantIsa* isa) {
    QuantMatrix w = m.w;
    w.int8_layout = isa ? int8_layout_for(*isa, w) : Int8Layout::packed;
    if (w.int8_layout != Int8Layout::packed) {
        m.int8_codes.resize(m.codes.size());
        write_int8_layout(m.w, w.int8_layout, m.int8_codes.data());
        w.int8_codes = m.int8_codes.data();
    }
    return w;
}

// n_tokens rows of int8 blocks as round_to_int8 leaves them (|q| <= 127),
// with their magnitudes for the leaves that read them.
struct Tokens {
    std::vector<int8_t> q;
    std::vector<float> scale;
    std::vector<int32_t> sum;
    std::vector<uint8_t> magnitude;
    std::vector<float> scaled_sum;
    Int8Rows rows;
};

Tokens random_tokens(std::mt19937& rng, int64_t n_tokens, int64_t n_in) {
    Tokens x;
    x.q.resize(static_cast<size_t>(n_tokens * n_in));
    std::uniform_int_distribution<int> q(-127, 127);
    for (auto& v : x.q) v = static_cast<int8_t>(q(rng));
    for (int8_t v : x.q) x.magnitude.push_back(static_cast<uint8_t>(std::abs(v)));
    std::uniform_real_distribution<float> scale(0.001f, 0.1f);
    const int64_t n_blocks = n_in / int8_block;
    x.scaled_sum.assign(static_cast<size_t>(n_tokens), 0.0f);
    for (int64_t b = 0; b < n_tokens * n_blocks; ++b) {
        x.scale.push_back(scale(rng));
        int32_t s = 0;
        for (int64_t e = 0; e < int8_block; ++e) s += x.q[static_cast<size_t>(b * int8_block + e)];
        x.sum.push_back(s);
        x.scaled_sum[static_cast<size_t>(b / n_blocks)] += x.scale.back() * static_cast<float>(s);
    }
    x.rows = {x.q.data(), x.scale.data(),     x.sum.data(),
              n_in,       x.magnitude.data(), x.scaled_sum.data()};
    return x;
}

std::string describe(const QuantIsa& isa, const QuantMatrix& w, int64_t n_tokens) {
    const char* kind = w.kind == QuantKind::lut ? "lut" : "int";
    return std::string(isa.name) + " " + kind + std::to_string(w.nbits) + " group " +
           std::to_string(w.group) + " [" + std::to_string(w.n_out) + ", " +
           std::to_string(w.n_in) + "] tokens " + std::to_string(n_tokens);
}

// Rows [o0, o1) of y with a stride past n_out, in passes of int8_pass_tokens
// as quant_matmul makes them, against gemv_int8 token by token; the rest of y
// stays untouched.
TEST(Int8Tokens, PassesMatchOneTokenAtATime) {
    std::mt19937 rng(21);
    int n_leaves = 0;
    for (const Format& f : formats) {
        for (const auto& [n_out, n_in] :
             {std::pair<int64_t, int64_t>{9, 128}, {37, 384}, {21, 1152}}) {
            Int8Matrix m = random_matrix(rng, f, n_out, n_in);
            ASSERT_TRUE(int8_dot_applies(m.w));
            const int64_t o0 = 3, o1 = n_out - 2, ldy = n_out + 5;
            for (int64_t n_tokens = 1; n_tokens <= 17; ++n_tokens) {
                const Tokens x = random_tokens(rng, n_tokens, n_in);
                for (const QuantIsa* isa : quant_available()) {
                    if (!isa->gemv_int8_tokens) continue;
                    ++n_leaves;
                    const QuantMatrix w = laid_out_for(m, isa);
                    std::vector<float> want(static_cast<size_t>(n_tokens * ldy), -7.0f);
                    std::vector<float> got = want;
                    for (int64_t t = 0; t < n_tokens; ++t)
                        isa->gemv_int8(w, x.rows.token(t), o0, o1, want.data() + t * ldy);
                    for (int64_t t = 0; t < n_tokens; t += isa->int8_pass_tokens) {
                        const int64_t n = std::min<int64_t>(isa->int8_pass_tokens, n_tokens - t);
                        isa->gemv_int8_tokens(w, x.rows.token(t), n, o0, o1, got.data() + t * ldy,
                                              ldy);
                    }
                    ASSERT_EQ(got, want) << describe(*isa, w, n_tokens);
                }
            }
        }
    }
    if (n_leaves == 0) GTEST_SKIP() << "no integer leaves for several tokens on this processor";
}

// The whole product, threads and row splits included: each token of a
// product of several equals that token alone.
TEST(Int8Tokens, ProductsMatchEachTokenAlone) {
    std::mt19937 rng(22);
    ThreadPool pool(2);
    if (quant_available().empty()) GTEST_SKIP() << "no quantized leaves on this processor";
    for (const Format& f : formats) {
        for (const auto& [n_out, n_in] :
             {std::pair<int64_t, int64_t>{45, 256}, {301, 640}, {1031, 128}}) {
            Int8Matrix m = random_matrix(rng, f, n_out, n_in);
            std::normal_distribution<float> value(0.0f, 1.0f);
            std::vector<float> x(static_cast<size_t>(quant_gemv_max_tokens * n_in));
            for (auto& v : x) v = value(rng);
            for (int64_t n_tokens = 1; n_tokens <= quant_gemv_max_tokens; ++n_tokens) {
                for (const QuantIsa* isa : quant_available()) {
                    const QuantMatrix w = laid_out_for(m, isa);
                    std::vector<float> got(static_cast<size_t>(n_tokens * n_out));
                    quant_matmul(*isa, w, x.data(), n_tokens, got.data(), pool);
                    std::vector<float> want(got.size());
                    for (int64_t t = 0; t < n_tokens; ++t) {
                        quant_matmul(*isa, w, x.data() + t * n_in, 1, want.data() + t * n_out,
                                     pool);
                    }
                    ASSERT_EQ(got, want) << describe(*isa, w, n_tokens);
                }
            }
        }
    }
}

// Matrices of one input multiplied together (rounded once, one pool run for
// few tokens) give what each gives alone, whether their codes round the input
// alike (4-bit lut and int4) or not (4- and 6-bit lut: each goes alone).
TEST(Int8Tokens, StackedProductsMatchEachMatrixAlone) {
    std::mt19937 rng(23);
    ThreadPool pool(2);
    constexpr int64_t n_in = 256;
    const std::vector<std::vector<Format>> stacks = {
        {{QuantKind::lut, 4, 8}, {QuantKind::int4, 4, 0}, {QuantKind::lut, 4, 1}},
        {{QuantKind::lut, 4, 8}, {QuantKind::lut, 6, 8}}};
    const int64_t n_outs[] = {45, 301, 64};
    for (const auto& stack : stacks) {
        std::vector<Int8Matrix> ms;
        std::vector<QuantMatrix> ws;
        for (size_t k = 0; k < stack.size(); ++k) {
            ms.push_back(random_matrix(rng, stack[k], n_outs[k], n_in));
        }
        for (Int8Matrix& m : ms) ws.push_back(laid_out_for(m, quant_active()));
        for (int64_t n_tokens : {1, 4, 9, 17, 40}) {
            std::normal_distribution<float> value(0.0f, 1.0f);
            std::vector<float> x(static_cast<size_t>(n_tokens * n_in));
            for (auto& v : x) v = value(rng);
            std::vector<std::vector<float>> got, want;
            std::vector<float*> ys;
            for (const QuantMatrix& w : ws) {
                got.emplace_back(static_cast<size_t>(n_tokens * w.n_out), NAN);
                want.emplace_back(got.back().size());
                ys.push_back(got.back().data());
                quant_matmul(w, x.data(), n_tokens, want.back().data(), pool);
            }
            quant_matmul_stacked(ws, x.data(), n_tokens, ys, pool);
            for (size_t k = 0; k < ws.size(); ++k)
                ASSERT_EQ(got[k], want[k])
                    << "matrix " << k << " of " << ws.size() << ", " << n_tokens << " tokens";
        }
    }
}

}  // namespace
}  // namespace anelm::kernels
