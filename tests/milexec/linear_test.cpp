// Matrix ops against plain loops: matmul with transposes and broadcast batch
// dimensions, linear with bias, conv with padding, strides, dilations and
// groups, scaled_dot_product_attention with bool and additive masks.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <limits>

#include "mil_program.h"

namespace anelm::milexec::test {
namespace {

constexpr auto F32 = mil::FLOAT32;

TEST(MilLinear, MatmulTransposesAndBroadcastsBatches) {
    // x [2, 1, 3, 2] transposed to [.., 2, 3]; y [3, 4, 3] transposed to [.., 3, 4].
    MilProgram p;
    const MilValue x = p.input("x", F32, {2, 1, 3, 2});
    const MilValue y = p.input("y", F32, {3, 4, 3});
    p.b.output(p.b.op("matmul", "z",
                      {{"x", x},
                       {"y", y},
                       {"transpose_x", MilParam::boolean(true)},
                       {"transpose_y", MilParam::boolean(true)}},
                      F32, {2, 3, 2, 4}));
    const std::vector<float> xv = ramp(12, 0.25f), yv = ramp(36, 0.125f);
    auto out = p.run({{"x", floats(F32, {2, 1, 3, 2}, xv)}, {"y", floats(F32, {3, 4, 3}, yv)}});
    std::vector<float> want;
    for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 3; ++b)
            for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 4; ++j) {
                    double s = 0;
                    for (int k = 0; k < 3; ++k) s += xv[a * 6 + k * 2 + i] * yv[b * 12 + j * 3 + k];
                    want.push_back(static_cast<float>(s));
                }
    expect_near(out.at("z").f, want);
}

TEST(MilLinear, MatmulEveryTransposeAndRowCount) {
    // The kernel paths (x @ yᵀ; x @ y with y transposed first from 4 rows of
    // x on; rows accumulated below that) against loops, batches broadcast.
    constexpr int64_t k = 19, n = 21;
    for (const bool tx : {false, true})
        for (const bool ty : {false, true})
            for (const int64_t m : {1, 3, 4, 9}) {
                SCOPED_TRACE(fmt::format("tx {} ty {} m {}", tx, ty, m));
                const std::vector<int64_t> xs = {2, 1, tx ? k : m, tx ? m : k};
                const std::vector<int64_t> ys = {3, ty ? n : k, ty ? k : n};
                MilProgram p;
                const MilValue x = p.input("x", F32, xs);
                const MilValue y = p.input("y", F32, ys);
                p.b.output(p.b.op("matmul", "z",
                                  {{"x", x},
                                   {"y", y},
                                   {"transpose_x", MilParam::boolean(tx)},
                                   {"transpose_y", MilParam::boolean(ty)}},
                                  F32, {2, 3, m, n}));
                const std::vector<float> xv = ramp(2 * m * k, 0.25f), yv = ramp(3 * k * n, 0.125f);
                auto out = p.run({{"x", floats(F32, xs, xv)}, {"y", floats(F32, ys, yv)}});
                std::vector<float> want;
                for (int64_t a = 0; a < 2; ++a)
                    for (int64_t b = 0; b < 3; ++b)
                        for (int64_t i = 0; i < m; ++i)
                            for (int64_t j = 0; j < n; ++j) {
                                double sum = 0;
                                for (int64_t t = 0; t < k; ++t)
                                    sum += xv[a * m * k + (tx ? t * m + i : i * k + t)] *
                                           yv[b * k * n + (ty ? j * k + t : t * n + j)];
                                want.push_back(static_cast<float>(sum));
                            }
                expect_near(out.at("z").f, want);
            }
}

TEST(MilLinear, MatmulWithAnFp16WeightMatchesLoops) {
    // y [4096, 3] is large enough to stay fp16; x @ yᵀ goes through the matmul kernel.
    MilProgram p;
    const MilValue x = p.input("x", F32, {1, 2, 3});
    const std::vector<float> w = ramp(4096 * 3, 0.125f);
    p.b.output(p.b.op("matmul", "z",
                      {{"x", x},
                       {"y", p.b.const_f16("w", {4096, 3}, w)},
                       {"transpose_y", MilParam::boolean(true)}},
                      F32, {1, 2, 4096}));
    const std::vector<float> xv = {1, -2, 0.5f, 0.25f, 3, -1};
    auto out = p.run({{"x", floats(F32, {1, 2, 3}, xv)}});
    std::vector<float> want;
    for (int t = 0; t < 2; ++t)
        for (int o = 0; o < 4096; ++o)
            want.push_back(xv[t * 3] * w[o * 3] + xv[t * 3 + 1] * w[o * 3 + 1] +
                           xv[t * 3 + 2] * w[o * 3 + 2]);
    expect_near(out.at("z").f, want);
}

TEST(MilLinear, LinearAddsBias) {
    MilProgram p;
    const MilValue x = p.input("x", F32, {1, 2, 3});
    const std::vector<float> w = {1, 0, -1, 0.5f, 0.5f, 0.5f}, bias = {0.25f, -2};
    p.b.output(p.b.op("linear", "y",
                      {{"x", x},
                       {"weight", p.b.const_f16("w", {2, 3}, w)},
                       {"bias", p.b.const_f16("b", {2}, bias)}},
                      F32, {1, 2, 2}));
    auto out = p.run({{"x", floats(F32, {1, 2, 3}, {1, 2, 3, -4, 0, 2})}});
    expect_near(out.at("y").f, {1 - 3 + 0.25f, 3 - 2, -4 - 2 + 0.25f, -1 - 2});
}

struct ConvCase {
    int64_t cin, cout, h, w, kh, kw, groups;
    std::vector<int32_t> strides, dilations;
    std::string pad_type;
    std::vector<int32_t> pad;  // top, bottom, left, right for custom
    int64_t oh, ow;            // expected output size
    int64_t pt, pl;            // the padding before, that the reference applies
};

void check_conv(const ConvCase& c) {
    MilProgram p;
    const MilValue x = p.input("x", F32, {1, c.cin, c.h, c.w});
    const int64_t cin_g = c.cin / c.groups, cout_g = c.cout / c.groups;
    const std::vector<float> wv = ramp(c.cout * cin_g * c.kh * c.kw, 0.125f);
    const std::vector<float> bias = ramp(c.cout, 0.5f);
    std::vector<MilInput> in = {
        {"x", x},
        {"weight", p.b.const_f16("w", {c.cout, cin_g, c.kh, c.kw}, wv)},
        {"bias", p.b.const_f16("b", {c.cout}, bias)},
        {"strides", MilParam::i32s(c.strides)},
        {"dilations", MilParam::i32s(c.dilations)},
        {"groups", MilParam::i32(static_cast<int32_t>(c.groups))},
        {"pad_type", MilParam::string(c.pad_type)},
        {"pad", MilParam::i32s(c.pad.empty() ? std::vector<int32_t>{0, 0, 0, 0} : c.pad)}};
    p.b.output(p.b.op("conv", "y", in, F32, {1, c.cout, c.oh, c.ow}));
    const std::vector<float> xv = ramp(c.cin * c.h * c.w, 0.0625f);
    auto out = p.run({{"x", floats(F32, {1, c.cin, c.h, c.w}, xv)}});
    std::vector<float> want;
    for (int64_t co = 0; co < c.cout; ++co)
        for (int64_t oy = 0; oy < c.oh; ++oy)
            for (int64_t ox = 0; ox < c.ow; ++ox) {
                double s = bias[co];
                const int64_t g = co / cout_g;
                for (int64_t ci = 0; ci < cin_g; ++ci)
                    for (int64_t ky = 0; ky < c.kh; ++ky)
                        for (int64_t kx = 0; kx < c.kw; ++kx) {
                            const int64_t iy = oy * c.strides[0] - c.pt + ky * c.dilations[0];
                            const int64_t ix = ox * c.strides[1] - c.pl + kx * c.dilations[1];
                            if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
                            s += wv[((co * cin_g + ci) * c.kh + ky) * c.kw + kx] *
                                 xv[((g * cin_g + ci) * c.h + iy) * c.w + ix];
                        }
                want.push_back(static_cast<float>(s));
            }
    expect_near(out.at("y").f, want, 1e-4f);
}

TEST(MilLinear, ConvOneByOneOverTheAneLayout) {
    // [1, C, 1, S] with a [Cout, Cin, 1, 1] weight: a linear layer on the ANE.
    check_conv({8, 5, 1, 6, 1, 1, 1, {1, 1}, {1, 1}, "valid", {}, 1, 6, 0, 0});
}

TEST(MilLinear, ConvCustomPadAndStride) {
    // 7x6 input, 3x3 kernel, pad (1, 2, 0, 1), stride 2: out (7+3-3)/2+1 = 4, (6+1-3)/2+1 = 3.
    check_conv({3, 4, 7, 6, 3, 3, 1, {2, 2}, {1, 1}, "custom", {1, 2, 0, 1}, 4, 3, 1, 0});
}

TEST(MilLinear, ConvSamePadDilatedAndGrouped) {
    // same: out = in / stride; dilation 2 makes the 3x3 kernel span 5, total pad 4, 2 before.
    check_conv({4, 6, 5, 5, 3, 3, 2, {1, 1}, {2, 2}, "same", {}, 5, 5, 2, 2});
}

TEST(MilLinear, ConvDepthwiseSumsTapsPerChannel) {
    // One group per channel: the causal conv's [1, C, 1, K - 1 + T] window, then padding,
    // strides and dilations.
    check_conv({6, 6, 1, 7, 1, 3, 6, {1, 1}, {1, 1}, "valid", {}, 1, 5, 0, 0});
    check_conv({4, 4, 5, 6, 2, 3, 4, {2, 1}, {1, 2}, "custom", {1, 0, 2, 1}, 3, 5, 1, 2});
}

TEST(MilLinear, AttentionWithBoolAndAdditiveMasks) {
    for (const bool boolean : {true, false}) {
        MilProgram p;
        const MilValue q = p.input("q", F32, {1, 2, 3, 4});
        const MilValue k = p.input("k", F32, {1, 2, 5, 4});
        const MilValue v = p.input("v", F32, {1, 2, 5, 2});
        // Query i sees keys 0..i+2 (a causal mask with two earlier positions).
        std::vector<float> additive;
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 5; ++j) {
                additive.push_back(j <= i + 2 ? 0.0f : -30000.0f);
            }
        MilValue mask;
        if (boolean) {
            mask =
                p.b.op("equal", "keep",
                       {{"x", p.b.const_f16("m", {3, 5}, additive)}, {"y", MilParam::fp16(0.0f)}},
                       mil::BOOL, {3, 5});
        } else {
            mask = p.b.const_f16("m", {3, 5}, additive);
        }
        p.b.output(p.b.op("scaled_dot_product_attention", "a",
                          {{"query", q}, {"key", k}, {"value", v}, {"attn_mask", mask}}, F32,
                          {1, 2, 3, 2}));
        const std::vector<float> qv = ramp(24, 0.25f), kv = ramp(40, 0.125f), vv = ramp(20, 0.375f);
        auto out = p.run({{"q", floats(F32, {1, 2, 3, 4}, qv)},
                          {"k", floats(F32, {1, 2, 5, 4}, kv)},
                          {"v", floats(F32, {1, 2, 5, 2}, vv)}});
        std::vector<float> want;
        for (int h = 0; h < 2; ++h)
            for (int i = 0; i < 3; ++i) {
                std::vector<double> w(5, 0.0);
                double sum = 0;
                for (int j = 0; j <= i + 2; ++j) {
                    double dot = 0;
                    for (int e = 0; e < 4; ++e)
                        dot += qv[(h * 3 + i) * 4 + e] * kv[(h * 5 + j) * 4 + e];
                    w[j] = std::exp(dot / 2.0);
                    sum += w[j];
                }
                for (int e = 0; e < 2; ++e) {
                    double acc = 0;
                    for (int j = 0; j < 5; ++j) acc += w[j] / sum * vv[(h * 5 + j) * 2 + e];
                    want.push_back(static_cast<float>(acc));
                }
            }
        SCOPED_TRACE(boolean ? "bool mask" : "additive mask");
        expect_near(out.at("a").f, want, 1e-5f);
    }
}

}  // namespace
}  // namespace anelm::milexec::test
