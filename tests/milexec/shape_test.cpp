// Shape and indexing ops: slice masks, transpose, concat and split, reshape,
// gather, softmax along an axis, layer_norm with gamma and beta, reductions.
#include <gtest/gtest.h>

#include "base/half.h"
#include "mil_program.h"

namespace anelm::milexec::test {
namespace {

constexpr auto F32 = mil::FLOAT32;

std::vector<float> iota(int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = static_cast<float>(k);
    return v;
}

// Ops that only move values do not round them again, but what they move from
// a constant (held as written) gets the function's rounding: a subnormal
// half is flushed by Rounding::f16_flush, as any computed value would be.
TEST(MilShape, MovedValuesAreRoundedOnceConstantsIncluded) {
    MilProgram p;
    const float tiny = 1e-6f;  // a subnormal half
    const std::vector<float> values = {tiny, 0.5f, -tiny, 3.0f};
    const MilValue c = p.b.const_f16("c", {4}, values);
    const MilValue x = p.input("x", mil::FLOAT16, {4});
    p.b.output(p.b.op("reshape", "from_const", {{"x", c}, {"shape", MilParam::i32s({2, 2})}},
                      mil::FLOAT16, {2, 2}));
    const MilValue scaled =
        p.b.op("mul", "scaled", {{"x", x}, {"y", MilParam::fp16(1.0f)}}, mil::FLOAT16, {4});
    p.b.output(p.b.op("slice_by_index", "from_op",
                      {{"x", scaled}, {"begin", MilParam::i32s({1})}, {"end", MilParam::i32s({3})}},
                      mil::FLOAT16, {2}));
    const Tensor in = floats(mil::FLOAT16, {4}, {0.25f, tiny, -tiny, 1.0f});
    const auto flushed = p.run({{"x", in}}, Rounding::f16_flush);
    EXPECT_EQ(flushed.at("from_const").f, (std::vector<float>{0.0f, 0.5f, -0.0f, 3.0f}));
    EXPECT_EQ(flushed.at("from_op").f, (std::vector<float>{0.0f, -0.0f}));
    const auto kept = p.run({{"x", in}}, Rounding::f16);
    EXPECT_EQ(kept.at("from_const").f[0], round_to_f16(tiny));
    EXPECT_EQ(kept.at("from_op").f[0], round_to_f16(tiny));
}

TEST(MilShape, SliceByIndexMasksStridesAndNegativeIndices) {
    // x [3, 4, 5] = iota. Axis 0: begin_mask from the start to 2 (0, 1); axis 1:
    // squeezed at -1 (3); axis 2: from 4 down to the end_mask's start with stride -2 (4, 2, 0).
    MilProgram p;
    const MilValue x = p.input("x", F32, {3, 4, 5});
    p.b.output(p.b.op("slice_by_index", "s",
                      {{"x", x},
                       {"begin", MilParam::i32s({2, -1, 4})},
                       {"end", MilParam::i32s({2, 0, 0})},
                       {"stride", MilParam::i32s({1, 1, -2})},
                       {"begin_mask", MilParam::bools({true, false, false})},
                       {"end_mask", MilParam::bools({false, false, true})},
                       {"squeeze_mask", MilParam::bools({false, true, false})}},
                      F32, {2, 3}));
    auto out = p.run({{"x", floats(F32, {3, 4, 5}, iota(60))}});
    std::vector<float> want;
    for (int a : {0, 1})
        for (int c : {4, 2, 0}) want.push_back(static_cast<float>(a * 20 + 3 * 5 + c));
    EXPECT_EQ(out.at("s").f, want);
}

TEST(MilShape, TransposeReshapeSplitConcat) {
    MilProgram p;
    const MilValue x = p.input("x", F32, {2, 3, 4});
    const MilValue t =
        p.b.op("transpose", "t", {{"x", x}, {"perm", MilParam::i32s({2, 0, 1})}}, F32, {4, 2, 3});
    const MilValue r =
        p.b.op("reshape", "r", {{"x", t}, {"shape", MilParam::i32s({0, -1})}}, F32, {4, 6});
    const auto parts = p.b.op_multi(
        "split", "sp",
        {{"x", r}, {"axis", MilParam::i32(1)}, {"split_sizes", MilParam::i32s({2, 4})}},
        {{"a", F32, {4, 2}}, {"b", F32, {4, 4}}});
    p.b.output(p.b.op("concat", "c",
                      {{"values", std::vector<MilValue>{parts[1], parts[0]}},
                       {"axis", MilParam::i32(-1)},
                       {"interleave", MilParam::boolean(false)}},
                      F32, {4, 6}));
    auto out = p.run({{"x", floats(F32, {2, 3, 4}, iota(24))}});
    // t[k, a, b] = x[a, b, k]; r row k = (x[0,0,k], x[0,1,k], x[0,2,k], x[1,0,k], ...).
    std::vector<float> want;
    for (int k = 0; k < 4; ++k) {
        std::vector<float> row;
        for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 3; ++b) row.push_back(static_cast<float>(a * 12 + b * 4 + k));
        want.insert(want.end(), row.begin() + 2, row.end());
        want.insert(want.end(), row.begin(), row.begin() + 2);
    }
    EXPECT_EQ(out.at("c").f, want);
}

TEST(MilShape, GatherAlongAnAxisWithNegativeIndices) {
    MilProgram p;
    const MilValue x = p.input("x", F32, {2, 3, 2});
    const MilValue i = p.input("i", mil::INT32, {2});
    p.b.output(p.b.op("gather", "g", {{"x", x}, {"indices", i}, {"axis", MilParam::i32(1)}}, F32,
                      {2, 2, 2}));
    auto out = p.run({{"x", floats(F32, {2, 3, 2}, iota(12))}, {"i", ints({2}, {2, -3})}});
    EXPECT_EQ(out.at("g").f, (std::vector<float>{4, 5, 0, 1, 10, 11, 6, 7}));
}

TEST(MilShape, GatherWithBatchDims) {
    // x [2, 3, 2], indices [2, 2], axis 1, batch_dims 1: out[b, j, :] = x[b, indices[b, j], :].
    MilProgram p;
    const MilValue x = p.input("x", F32, {2, 3, 2});
    const MilValue i = p.input("i", mil::INT32, {2, 2});
    p.b.output(p.b.op(
        "gather", "g",
        {{"x", x}, {"indices", i}, {"axis", MilParam::i32(1)}, {"batch_dims", MilParam::i32(1)}},
        F32, {2, 2, 2}));
    auto out = p.run({{"x", floats(F32, {2, 3, 2}, iota(12))}, {"i", ints({2, 2}, {2, 0, 1, 1})}});
    EXPECT_EQ(out.at("g").f, (std::vector<float>{4, 5, 0, 1, 8, 9, 8, 9}));
}

TEST(MilShape, GatherFromAnFp16TableKeptAsWeights) {
    // 4096 rows of one value: large enough to stay fp16.
    MilProgram p;
    std::vector<float> table(4096 * 2);
    for (size_t k = 0; k < table.size(); ++k) table[k] = static_cast<float>(k % 1000) * 0.5f;
    const MilValue t = p.b.const_f16("table", {4096, 2}, table);
    const MilValue i = p.input("i", mil::INT32, {2});
    p.b.output(p.b.op("gather", "g", {{"x", t}, {"indices", i}}, mil::FLOAT16, {2, 2}));
    auto out = p.run({{"i", ints({2}, {4000, 3})}});
    EXPECT_EQ(out.at("g").f, (std::vector<float>{table[8000], table[8001], table[6], table[7]}));
}

TEST(MilShape, SoftmaxAlongTheMiddleAxis) {
    MilProgram p;
    const MilValue x = p.input("x", F32, {2, 3, 2});
    p.b.output(p.b.op("softmax", "s", {{"x", x}, {"axis", MilParam::i32(1)}}, F32, {2, 3, 2}));
    const std::vector<float> xv = {0, 1, 2, 3, 4, 5, -1, 0, 1, 0, -1, 7};
    auto out = p.run({{"x", floats(F32, {2, 3, 2}, xv)}});
    std::vector<float> want(12);
    for (int a = 0; a < 2; ++a)
        for (int c = 0; c < 2; ++c) {
            double sum = 0;
            for (int b = 0; b < 3; ++b) sum += std::exp(xv[a * 6 + b * 2 + c]);
            for (int b = 0; b < 3; ++b)
                want[a * 6 + b * 2 + c] = static_cast<float>(std::exp(xv[a * 6 + b * 2 + c]) / sum);
        }
    expect_near(out.at("s").f, want);
}

TEST(MilShape, LayerNormWithGammaAndBeta) {
    MilProgram p;
    const MilValue x = p.input("x", F32, {2, 4});
    const std::vector<float> gamma = {1, 2, 0.5f, -1}, beta = {0, 1, 0, 0.25f};
    p.b.output(p.b.op("layer_norm", "n",
                      {{"x", x},
                       {"axes", MilParam::i32s({-1})},
                       {"gamma", p.b.const_f16("gamma", {4}, gamma)},
                       {"beta", p.b.const_f16("beta", {4}, beta)},
                       {"epsilon", MilParam::fp32(1e-5f)}},
                      F32, {2, 4}));
    const std::vector<float> xv = {1, 2, 3, 4, -2, 0, 2, 8};
    auto out = p.run({{"x", floats(F32, {2, 4}, xv)}});
    std::vector<float> want;
    for (int r = 0; r < 2; ++r) {
        double mean = 0, var = 0;
        for (int k = 0; k < 4; ++k) mean += xv[r * 4 + k] / 4.0;
        for (int k = 0; k < 4; ++k) var += (xv[r * 4 + k] - mean) * (xv[r * 4 + k] - mean) / 4.0;
        for (int k = 0; k < 4; ++k)
            want.push_back(static_cast<float>(
                (xv[r * 4 + k] - mean) / std::sqrt(var + 1e-5) * gamma[k] + beta[k]));
    }
    expect_near(out.at("n").f, want, 1e-4f);
}

TEST(MilShape, ReductionsKeepOrDropAxes) {
    MilProgram p;
    const MilValue x = p.input("x", F32, {2, 3});
    p.b.output(
        p.b.op("reduce_mean", "m",
               {{"x", x}, {"axes", MilParam::i32s({0})}, {"keep_dims", MilParam::boolean(true)}},
               F32, {1, 3}));
    p.b.output(p.b.op("reduce_max", "mx", {{"x", x}, {"axes", MilParam::i32s({-1})}}, F32, {2}));
    p.b.output(
        p.b.op("reduce_argmax", "am", {{"x", x}, {"axis", MilParam::i32(-1)}}, mil::INT32, {2}));
    p.b.output(p.b.op("reduce_sum", "all", {{"x", x}}, F32, {}));
    auto out = p.run({{"x", floats(F32, {2, 3}, {1, 5, 2, 7, -1, 7})}});
    EXPECT_EQ(out.at("m").f, (std::vector<float>{4, 2, 4.5f}));
    EXPECT_EQ(out.at("mx").f, (std::vector<float>{5, 7}));
    EXPECT_EQ(out.at("am").i, (std::vector<int32_t>{1, 0}));  // the first of equal maxima
    EXPECT_EQ(out.at("all").f, (std::vector<float>{21}));
}

TEST(MilShape, BandPartKeepsTheLowerTriangle) {
    MilProgram p;
    const MilValue x = p.input("x", F32, {3, 3});
    p.b.output(p.b.op("band_part", "b",
                      {{"x", x}, {"lower", MilParam::i32(-1)}, {"upper", MilParam::i32(0)}}, F32,
                      {3, 3}));
    auto out = p.run({{"x", floats(F32, {3, 3}, iota(9))}});
    EXPECT_EQ(out.at("b").f, (std::vector<float>{0, 0, 0, 3, 4, 0, 6, 7, 8}));
}

TEST(MilShape, StackFillAndRange) {
    MilProgram p;
    const MilValue x = p.input("x", F32, {2, 2});
    const MilValue y = p.input("y", F32, {2, 2});
    p.b.output(p.b.op("stack", "s",
                      {{"values", std::vector<MilValue>{x, y}}, {"axis", MilParam::i32(-1)}}, F32,
                      {2, 2, 2}));
    p.b.output(p.b.op("fill", "f",
                      {{"shape", MilParam::i32s({2, 3})}, {"value", MilParam::fp32(1.5f)}}, F32,
                      {2, 3}));
    p.b.output(p.b.op(
        "range_1d", "r",
        {{"start", MilParam::i32(5)}, {"end", MilParam::i32(-2)}, {"step", MilParam::i32(-3)}},
        mil::INT32, {3}));
    auto out =
        p.run({{"x", floats(F32, {2, 2}, {1, 2, 3, 4})}, {"y", floats(F32, {2, 2}, {5, 6, 7, 8})}});
    EXPECT_EQ(out.at("s").f, (std::vector<float>{1, 5, 2, 6, 3, 7, 4, 8}));
    EXPECT_EQ(out.at("f").f, std::vector<float>(6, 1.5f));
    EXPECT_EQ(out.at("r").i, (std::vector<int32_t>{5, 2, -1}));
}

TEST(MilShape, ConcatInterleaves) {
    // coremltools' example: [[1,2],[3,4],[5,6]] and [[7,8],[9,10],[11,12]] on axis 0.
    MilProgram p;
    const MilValue a = p.input("a", F32, {3, 2});
    const MilValue b = p.input("b", F32, {3, 2});
    p.b.output(p.b.op("concat", "c",
                      {{"values", std::vector<MilValue>{a, b}},
                       {"axis", MilParam::i32(0)},
                       {"interleave", MilParam::boolean(true)}},
                      F32, {6, 2}));
    p.b.output(p.b.op("concat", "d",
                      {{"values", std::vector<MilValue>{a, b}},
                       {"axis", MilParam::i32(1)},
                       {"interleave", MilParam::boolean(true)}},
                      F32, {3, 4}));
    auto out = p.run({{"a", floats(F32, {3, 2}, {1, 2, 3, 4, 5, 6})},
                      {"b", floats(F32, {3, 2}, {7, 8, 9, 10, 11, 12})}});
    EXPECT_EQ(out.at("c").f, (std::vector<float>{1, 2, 7, 8, 3, 4, 9, 10, 5, 6, 11, 12}));
    EXPECT_EQ(out.at("d").f, (std::vector<float>{1, 7, 2, 8, 3, 9, 4, 10, 5, 11, 6, 12}));
}

TEST(MilShape, TopkAlongTheFirstAxis) {
    MilProgram p;
    const MilValue x = p.input("x", F32, {4, 2});
    p.b.op_multi("topk", "t", {{"x", x}, {"k", MilParam::i32(2)}, {"axis", MilParam::i32(0)}},
                 {{"vals", F32, {2, 2}}, {"idx", mil::INT32, {2, 2}}});
    p.b.output({"vals", F32, {2, 2}});
    p.b.output({"idx", mil::INT32, {2, 2}});
    auto out = p.run({{"x", floats(F32, {4, 2}, {1, 9, 7, 3, 7, 8, 2, 9})}});
    EXPECT_EQ(out.at("vals").f, (std::vector<float>{7, 9, 7, 9}));
    EXPECT_EQ(out.at("idx").i,
              (std::vector<int32_t>{1, 0, 2, 3}));  // ties: the earlier index first
}

}  // namespace
}  // namespace anelm::milexec::test
