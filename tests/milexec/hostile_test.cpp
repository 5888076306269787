// Hostile programs: declared shapes that disagree with the values behind them,
// element counts that overflow, sizes read from constants. Each ends in one
// Error naming the op before anything is written out of bounds or a huge
// tensor allocated. And a constexpr result of no elements divides by nothing.
#include <gtest/gtest.h>

#include <functional>

#include "io/io_test_util.h"
#include "mil_program.h"

namespace anelm::milexec::test {
namespace {

constexpr auto F16 = mil::FLOAT16;
constexpr auto F32 = mil::FLOAT32;

using anelm::test::expect_error;

// Compiling main (constants and constexpr ops are evaluated then).
std::function<void()> compile(MilProgram& p) {
    return [&p] { Function f(p.program, "main", p.blobs); };
}

std::function<void()> run(MilProgram& p, std::map<std::string, Tensor> inputs = {}) {
    return [&p, inputs] { p.run(inputs); };
}

// A blob of n bytes of `byte`, kept alive by the blob set.
mil::Value filled_blob(MilProgram& p, mil::DataType dtype, std::vector<int64_t> shape, size_t bytes,
                       uint8_t byte = 0) {
    auto data = std::make_shared<std::vector<uint8_t>>(bytes, byte);
    return coreml::blob_value(p.blobs, dtype, shape, *data, data);
}

// A tensor literal of this type holding `floats` as its immediate values.
mil::Value immediate_floats(mil::DataType dtype, const std::vector<int64_t>& shape,
                            const std::vector<float>& floats) {
    mil::Value v;
    *v.mutable_type() = coreml::tensor_value_type(dtype, shape);
    auto& out = *v.mutable_immediatevalue()->mutable_tensor()->mutable_floats();
    for (float x : floats) out.add_values(x);
    return v;
}

TEST(MilHostile, ConstexprCastCheckedBeforeWriting) {
    // A million source elements into a declared fp16[1]: nothing is written.
    MilProgram p;
    p.b.output(p.b.op_literal("constexpr_cast", "w",
                              {{"source", filled_blob(p, F16, {1 << 20}, 2 << 20)}}, F16, {1}));
    expect_error(compile(p),
                 {"op w (constexpr_cast)", "result has 1048576 elements, declared [1]"});
}

TEST(MilHostile, ConstexprResultCheckedBeforeAllocating) {
    // A declared fp32[2^17, 2^17] (64 GiB) from four source elements.
    MilProgram p;
    p.b.output(p.b.op_literal("constexpr_cast", "w",
                              {{"source", immediate_floats(F16, {4}, {1, 2, 3, 4})}}, F32,
                              {1 << 17, 1 << 17}));
    expect_error(compile(p), {"result has 4 elements, declared [131072, 131072]"});
}

TEST(MilHostile, LutToDenseShapeCheckedBeforeWriting) {
    // iOS16: 1000 1-bit codes for a declared fp16[1].
    MilProgram p;
    p.b.output(p.b.op_literal("constexpr_lut_to_dense", "w",
                              {{"indices", filled_blob(p, mil::UINT8, {125}, 125, 0xff)},
                               {"lut", immediate_floats(F16, {2}, {-1, 1})},
                               {"shape", MilParam::i32s({1000}).value}},
                              F16, {1}));
    expect_error(compile(p), {"result has 1000 elements, declared [1]"});

    // A negative dimension is no element count (it once asked for 2^64 - 1 codes).
    MilProgram q;
    q.b.output(q.b.op_literal("constexpr_lut_to_dense", "w",
                              {{"indices", filled_blob(q, mil::UINT8, {1}, 1)},
                               {"lut", immediate_floats(F16, {2}, {-1, 1})},
                               {"shape", MilParam::i32s({-1}).value}},
                              F16, {1}));
    expect_error(compile(q), {"op w (constexpr_lut_to_dense)", "shape [-1]", "negative dimension"});

    // iOS18: indices [4, 3] with one palette, declared fp16[1].
    MilProgram r;
    r.b.output(r.b.op_literal("constexpr_lut_to_dense", "w",
                              {{"indices", filled_blob(r, mil::UINT2, {4, 3}, 3)},
                               {"lut", immediate_floats(F16, {1, 1, 4, 1}, {1, 2, 3, 4})}},
                              F16, {1}));
    expect_error(compile(r), {"result has 12 elements, declared [1]"});
}

TEST(MilHostile, ShiftScaleCheckedBeforeWriting) {
    MilProgram p;
    p.b.output(p.b.op_literal("constexpr_blockwise_shift_scale", "w",
                              {{"data", filled_blob(p, mil::INT8, {1000}, 1000)},
                               {"scale", immediate_floats(F16, {1}, {0.5f})}},
                              F16, {1}));
    expect_error(compile(p), {"op w (constexpr_blockwise_shift_scale)",
                              "result has 1000 elements, declared [1]"});
}

TEST(MilHostile, ShiftScaleOfNoElements) {
    // data [3, 0]: no row width to divide by (this once divided by zero).
    MilProgram p;
    p.b.output(p.b.op_literal("constexpr_blockwise_shift_scale", "w",
                              {{"data", filled_blob(p, mil::INT8, {3, 0}, 0)},
                               {"scale", immediate_floats(F16, {3, 1}, {1, 2, 3})}},
                              F16, {3, 0}));
    const auto out = p.run({});
    EXPECT_EQ(out.at("w").shape, (std::vector<int64_t>{3, 0}));
    EXPECT_TRUE(out.at("w").f.empty());
}

TEST(MilHostile, ElementCountsDoNotWrap) {
    // fp32[2^62, 4] has 2^64 elements, 0 once wrapped: no values must not fit it.
    MilProgram p;
    const MilValue big = p.b.const_value("big", immediate_floats(F32, {int64_t{1} << 62, 4}, {}));
    p.b.output(p.b.op("gather", "g", {{"x", big}, {"indices", MilParam::i32s({5})}}, F32, {1, 4}));
    expect_error(compile(p), {"op big (const)", "more than 2^40 elements"});

    // An fp16 blob of no bytes standing for fp16[2^62, 4].
    MilProgram q;
    mil::Value empty = filled_blob(q, F16, {0}, 0);
    *empty.mutable_type() = coreml::tensor_value_type(F16, {int64_t{1} << 62, 4});
    const MilValue w = q.b.const_value("w", empty);
    q.b.output(q.b.op("gather", "g", {{"x", w}, {"indices", MilParam::i32s({5})}}, F32, {1, 4}));
    expect_error(compile(q), {"holds 0 elements"});

    // Shapes given to reshape: [-2, -3] has no negative count of 6.
    MilProgram r;
    const MilValue x = r.input("x", F32, {6});
    r.b.output(
        r.b.op("reshape", "y", {{"x", x}, {"shape", MilParam::i32s({-2, -3})}}, F32, {-1, -1}));
    expect_error(run(r, {{"x", floats(F32, {6}, ramp(6))}}),
                 {"op y (reshape)", "shape [-2, -3] has a negative dimension"});
}

TEST(MilHostile, ImmediateValuesCountedBeforeAllocating) {
    // One float for fp32[65536, 65536]: refused without zero-filling 16 GiB.
    MilProgram p;
    p.b.output(p.b.const_value("big", immediate_floats(F32, {65536, 65536}, {1})));
    expect_error(compile(p), {"op big (const)", "1 values for a tensor of 4294967296 elements"});
}

TEST(MilHostile, SizesFromValuesAreCapped) {
    MilProgram p;
    p.b.output(p.b.op("fill", "f", {{"shape", MilParam::i32s({1 << 20, 1 << 20})}}, F32, {-1, -1}));
    expect_error(run(p), {"op f (fill)", "more than 2^31 elements"});

    MilProgram q;
    q.b.output(q.b.op("fill", "f", {{"shape", MilParam::i32s({-5})}}, F32, {-1}));
    expect_error(run(q), {"op f (fill)", "negative dimension"});

    MilProgram r;
    r.b.output(r.b.op(
        "range_1d", "r",
        {{"start", MilParam::fp32(0)}, {"end", MilParam::fp32(1e30f)}, {"step", MilParam::fp32(1)}},
        F32, {-1}));
    expect_error(run(r), {"op r (range_1d)", "more than 2^31 elements"});

    MilProgram s;
    const MilValue x = s.input("x", F32, {2, 2});
    s.b.output(s.b.op("tile", "t", {{"x", x}, {"reps", MilParam::i32s({1 << 16, 1 << 16})}}, F32,
                      {-1, -1}));
    expect_error(run(s, {{"x", floats(F32, {2, 2}, ramp(4))}}),
                 {"op t (tile)", "more than 2^31 elements"});

    MilProgram t;
    const MilValue y = t.input("x", F32, {2});
    t.b.output(t.b.op("tile", "t", {{"x", y}, {"reps", MilParam::i32s({-3})}}, F32, {-1}));
    expect_error(run(t, {{"x", floats(F32, {2}, ramp(2))}}),
                 {"op t (tile)", "reps [-3] do not fit x [2]"});
}

TEST(MilHostile, StateOfUnknownShapeIsRefused) {
    MilProgram p;
    const MilValue cache = p.state("cache", {-1, 4});
    p.b.output(p.b.op("read_state", "read", {{"input", cache}}, F16, {-1, 4}));
    expect_error(run(p), {"state cache: shape [-1, 4] has an unknown or negative dimension"});
}

}  // namespace
}  // namespace anelm::milexec::test
