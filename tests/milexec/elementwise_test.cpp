// Elementwise ops: numpy broadcasting, integer arithmetic, comparisons and
// select, the three gelu modes, fp16 rounding of outputs.
#include <gtest/gtest.h>

#include "base/half.h"
#include "mil_program.h"

namespace anelm::milexec::test {
namespace {

constexpr auto F32 = mil::FLOAT32;

TEST(MilElementwise, BroadcastsAsNumpy) {
    MilProgram p;
    const MilValue x = p.input("x", F32, {2, 1, 3});
    const MilValue y = p.input("y", F32, {4, 1});
    p.b.output(p.b.op("sub", "d", {{"x", x}, {"y", y}}, F32, {2, 4, 3}));
    const std::vector<float> xv = {1, 2, 3, 4, 5, 6}, yv = {10, 20, 30, 40};
    auto out = p.run({{"x", floats(F32, {2, 1, 3}, xv)}, {"y", floats(F32, {4, 1}, yv)}});
    std::vector<float> want;
    for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 4; ++b)
            for (int c = 0; c < 3; ++c) want.push_back(xv[a * 3 + c] - yv[b]);
    EXPECT_EQ(out.at("d").shape, (std::vector<int64_t>{2, 4, 3}));
    expect_near(out.at("d").f, want);
}

TEST(MilElementwise, IntegersAddExactly) {
    MilProgram p;
    const MilValue x = p.input("x", mil::INT32, {4});
    p.b.output(
        p.b.op("add", "s", {{"x", x}, {"y", MilParam::i32s({1, 2, 1, 8})}}, mil::INT32, {4}));
    auto out = p.run({{"x", ints({4}, {0, 0, 5, -3})}});
    EXPECT_EQ(out.at("s").i, (std::vector<int32_t>{1, 2, 6, 5}));
}

TEST(MilElementwise, ComparisonFeedsSelect) {
    MilProgram p;
    const MilValue x = p.input("x", F32, {2, 2});
    const MilValue keep =
        p.b.op("greater_equal", "keep", {{"x", x}, {"y", MilParam::fp32(0.5f)}}, mil::BOOL, {2, 2});
    p.b.output(p.b.op("select", "m", {{"cond", keep}, {"a", x}, {"b", MilParam::fp32(-100.0f)}},
                      F32, {2, 2}));
    auto out = p.run({{"x", floats(F32, {2, 2}, {0.25f, 0.5f, 1.0f, -1.0f})}});
    expect_near(out.at("m").f, {-100.0f, 0.5f, 1.0f, -100.0f});
}

TEST(MilElementwise, GeluModes) {
    const std::vector<float> xv = {-2.0f, -0.5f, 0.0f, 1.0f, 3.0f};
    for (const char* mode : {"EXACT", "TANH_APPROXIMATION", "SIGMOID_APPROXIMATION"}) {
        MilProgram p;
        const MilValue x = p.input("x", F32, {5});
        p.b.output(p.b.op("gelu", "g", {{"x", x}, {"mode", MilParam::string(mode)}}, F32, {5}));
        auto out = p.run({{"x", floats(F32, {5}, xv)}});
        std::vector<float> want;
        for (float v : xv) {
            const double d = v;
            if (std::string(mode) == "EXACT")
                want.push_back(static_cast<float>(0.5 * d * (1.0 + std::erf(d / std::sqrt(2.0)))));
            else if (std::string(mode) == "TANH_APPROXIMATION")
                want.push_back(static_cast<float>(
                    0.5 * d * (1.0 + std::tanh(0.7978845608 * (d + 0.044715 * d * d * d)))));
            else
                want.push_back(static_cast<float>(d / (1.0 + std::exp(-1.702 * d))));
        }
        SCOPED_TRACE(mode);
        expect_near(out.at("g").f, want);
    }
    // The modes differ: gelu(1) is 0.8413 exactly, 0.8412 with tanh, 0.8458 with sigmoid.
}

TEST(MilElementwise, RoundingF16OverflowsToInfinity) {
    MilProgram p;
    const MilValue x = p.input("x", mil::FLOAT16, {2});
    p.b.output(p.b.op("mul", "y", {{"x", x}, {"y", MilParam::fp16(300.0f)}}, mil::FLOAT16, {2}));
    const Tensor in = floats(mil::FLOAT16, {2}, {300.0f, 0.1f});
    auto none = p.run({{"x", in}}, Rounding::none);
    EXPECT_FLOAT_EQ(none.at("y").f[0], 90000.0f);
    EXPECT_FLOAT_EQ(none.at("y").f[1], 0.1f * 300.0f);
    auto f16 = p.run({{"x", in}}, Rounding::f16);
    EXPECT_TRUE(std::isinf(f16.at("y").f[0]));
    // 0.1 is first rounded to half (0.0999755859375), the product to half again.
    EXPECT_FLOAT_EQ(f16.at("y").f[1], round_to_f16(round_to_f16(0.1f) * 300.0f));
}

TEST(MilElementwise, UnaryOps) {
    MilProgram p;
    const MilValue x = p.input("x", F32, {3});
    p.b.output(p.b.op("rsqrt", "r", {{"x", x}, {"epsilon", MilParam::fp32(0.0f)}}, F32, {3}));
    p.b.output(p.b.op("silu", "s", {{"x", x}}, F32, {3}));
    p.b.output(p.b.op("clip", "c",
                      {{"x", x}, {"alpha", MilParam::fp32(0.5f)}, {"beta", MilParam::fp32(2.0f)}},
                      F32, {3}));
    p.b.output(
        p.b.op("cast", "i", {{"x", x}, {"dtype", MilParam::string("int32")}}, mil::INT32, {3}));
    auto out = p.run({{"x", floats(F32, {3}, {0.25f, 1.0f, 4.0f})}});
    expect_near(out.at("r").f, {2.0f, 1.0f, 0.5f});
    expect_near(out.at("s").f, {0.25f / (1 + std::exp(-0.25f)), 1.0f / (1 + std::exp(-1.0f)),
                                4.0f / (1 + std::exp(-4.0f))});
    expect_near(out.at("c").f, {0.5f, 1.0f, 2.0f});
    EXPECT_EQ(out.at("i").i, (std::vector<int32_t>{0, 1, 4}));
}

TEST(MilElementwise, RoundingFloorAndModFollowNumpy) {
    MilProgram p;
    const MilValue x = p.input("x", F32, {4});
    for (const char* op : {"round", "floor", "ceil", "sign"})
        p.b.output(p.b.op(op, op, {{"x", x}}, F32, {4}));
    p.b.output(p.b.op("floor_div", "fd", {{"x", x}, {"y", MilParam::fp32(2.0f)}}, F32, {4}));
    p.b.output(p.b.op("mod", "md", {{"x", x}, {"y", MilParam::fp32(-2.0f)}}, F32, {4}));
    p.b.output(p.b.op("inverse", "inv", {{"x", x}, {"epsilon", MilParam::fp32(0.0f)}}, F32, {4}));
    auto out = p.run({{"x", floats(F32, {4}, {0.5f, 2.5f, -1.5f, -3.0f})}});
    EXPECT_EQ(out.at("round").f, (std::vector<float>{0, 2, -2, -3}));
    EXPECT_EQ(out.at("floor").f, (std::vector<float>{0, 2, -2, -3}));
    EXPECT_EQ(out.at("ceil").f, (std::vector<float>{1, 3, -1, -3}));
    EXPECT_EQ(out.at("sign").f, (std::vector<float>{1, 1, -1, -1}));
    EXPECT_EQ(out.at("fd").f, (std::vector<float>{0, 1, -1, -2}));
    EXPECT_EQ(out.at("md").f, (std::vector<float>{-1.5f, -1.5f, -1.5f, -1.0f}));
    expect_near(out.at("inv").f, {2.0f, 0.4f, -1.0f / 1.5f, -1.0f / 3.0f});
}

TEST(MilElementwise, LogicalOps) {
    MilProgram p;
    const MilValue a = p.input("a", mil::BOOL, {4});
    const MilValue b = p.input("b", mil::BOOL, {4});
    p.b.output(p.b.op("logical_and", "and", {{"x", a}, {"y", b}}, mil::BOOL, {4}));
    p.b.output(p.b.op("logical_or", "or", {{"x", a}, {"y", b}}, mil::BOOL, {4}));
    p.b.output(p.b.op("logical_xor", "xor", {{"x", a}, {"y", b}}, mil::BOOL, {4}));
    p.b.output(p.b.op("logical_not", "not", {{"x", a}}, mil::BOOL, {4}));
    Tensor ta = ints({4}, {0, 0, 1, 1}), tb = ints({4}, {0, 1, 0, 1});
    ta.dtype = tb.dtype = mil::BOOL;
    auto out = p.run({{"a", ta}, {"b", tb}});
    EXPECT_EQ(out.at("and").i, (std::vector<int32_t>{0, 0, 0, 1}));
    EXPECT_EQ(out.at("or").i, (std::vector<int32_t>{0, 1, 1, 1}));
    EXPECT_EQ(out.at("xor").i, (std::vector<int32_t>{0, 1, 1, 0}));
    EXPECT_EQ(out.at("not").i, (std::vector<int32_t>{1, 1, 0, 0}));
}

}  // namespace
}  // namespace anelm::milexec::test
