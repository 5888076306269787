// An RMSNorm as the ANE lowering writes it (mul by -1, concat, layer_norm,
// slice, gain) runs as one planned step: its output is that of running the
// same ops one by one, bit for bit, in each rounding.
#include <gtest/gtest.h>

#include <cmath>

#include "mil_program.h"

namespace anelm::milexec::test {
namespace {

constexpr auto F16 = mil::FLOAT16;

struct Norm {
    std::vector<int64_t> shape;  // of x
    int axis;
    std::vector<int64_t> gain_shape;  // empty: no gain
};

// The pattern on input x; with `exposed`, the negated copy is also an output,
// which leaves nothing to plan.
MilProgram rms_norm(const Norm& n, bool exposed) {
    MilProgram p;
    const MilValue x = p.input("x", F16, n.shape);
    const MilValue neg =
        p.b.op("mul", "neg", {{"x", x}, {"y", MilParam::fp16(-1.0f)}}, F16, n.shape);
    std::vector<int64_t> both_shape = n.shape;
    both_shape[static_cast<size_t>(n.axis)] *= 2;
    const MilValue both = p.b.op("concat", "both",
                                 {{"values", std::vector<MilValue>{x, neg}},
                                  {"axis", MilParam::i32(n.axis)},
                                  {"interleave", MilParam::boolean(false)}},
                                 F16, both_shape);
    const MilValue normed = p.b.op(
        "layer_norm", "ln",
        {{"x", both}, {"axes", MilParam::i32s({n.axis})}, {"epsilon", MilParam::fp16(1e-5f)}}, F16,
        both_shape);
    const std::vector<int32_t> end(n.shape.begin(), n.shape.end());
    const MilValue half = p.b.op("slice_by_index", "half",
                                 {{"x", normed},
                                  {"begin", p.b.const_i32("begin", {4}, {0, 0, 0, 0})},
                                  {"end", p.b.const_i32("end", {4}, end)}},
                                 F16, n.shape);
    if (n.gain_shape.empty()) {
        p.b.output(half);
    } else {
        const std::vector<float> g = ramp(shape_numel(n.gain_shape), 0.375f);
        const MilValue gain = p.b.const_f16("gain", n.gain_shape, g);
        p.b.output(p.b.op("mul", "out", {{"x", half}, {"y", gain}}, F16, n.shape));
    }
    if (exposed) p.b.output(neg);
    return p;
}

TEST(MilRmsNormStep, PlannedNormsGiveTheOpsOutputsBitForBit) {
    const std::vector<Norm> norms = {
        {{1, 48, 1, 1}, 1, {1, 48, 1, 1}},  // a token's hidden state
        {{1, 6, 16, 1}, 2, {1, 1, 16, 1}},  // per-head q/k norms
        {{1, 40, 1, 1}, 1, {}},             // no gain
        {{1, 40, 1, 1}, 1, {1}},            // one gain for all
        {{1, 24, 1, 3}, 1, {1, 24, 1, 1}},  // three positions: run op by op
    };
    for (const Norm& n : norms)
        for (const Rounding rounding : {Rounding::none, Rounding::f16, Rounding::f16_flush}) {
            SCOPED_TRACE(shape_text(n.shape) + " rounding " +
                         std::to_string(static_cast<int>(rounding)));
            const MilProgram planned = rms_norm(n, false), op_by_op = rms_norm(n, true);
            Function a(planned.program, "main", planned.blobs, rounding);
            Function b(op_by_op.program, "main", op_by_op.blobs, rounding);
            EXPECT_EQ(a.rms_norms_planned(), 1);
            EXPECT_EQ(b.rms_norms_planned(), 0);
            // Large values too: their squares overflow fp16, not the f32 sums.
            std::vector<float> xv = ramp(shape_numel(n.shape), 0.3f);
            for (size_t k = 0; k < xv.size(); k += 5) xv[k] *= 700.0f;
            const std::map<std::string, Tensor> in = {{"x", floats(F16, n.shape, xv)}};
            States sa, sb;
            const auto got = a.run(in, sa), want = b.run(in, sb);
            const std::string out = n.gain_shape.empty() ? "half" : "out";
            EXPECT_EQ(got.at(out).shape, want.at(out).shape);
            EXPECT_EQ(got.at(out).f, want.at(out).f);
            if (n.shape[3] != 1 || rounding != Rounding::none || n.gain_shape.size() != 4) continue;
            // And it is an RMSNorm: x / rms(x) * gain, row by row.
            const int64_t rows = n.axis == 1 ? 1 : n.shape[1], len = n.shape[n.axis];
            const std::vector<float> g = ramp(len, 0.375f);
            for (int64_t r = 0; r < rows; ++r) {
                double ss = 0;
                for (int64_t j = 0; j < len; ++j) ss += xv[r * len + j] * xv[r * len + j];
                const double rms = std::sqrt(ss / len + 1e-5);
                for (int64_t j = 0; j < len; ++j)
                    EXPECT_NEAR(got.at(out).f[r * len + j], xv[r * len + j] / rms * g[j], 1e-4);
            }
        }
}

}  // namespace
}  // namespace anelm::milexec::test
