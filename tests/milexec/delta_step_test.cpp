// The delta rule's step as the ANE lowering writes it (mul, matmul, sub,
// matmul, add, matmul per token) runs as one planned kernel: its outputs are
// those of running the same ops one by one, bit for bit, in each rounding.
#include <gtest/gtest.h>

#include "mil_program.h"

namespace anelm::milexec::test {
namespace {

constexpr int64_t heads = 3, dk = 5, dv = 7, tokens = 2;
constexpr auto F16 = mil::FLOAT16;

MilValue matmul(MilBuilder& b, const MilValue& x, const MilValue& y, bool tx,
                std::vector<int64_t> shape, const std::string& name) {
    return b.op("matmul", name,
                {{"x", x},
                 {"y", y},
                 {"transpose_x", MilParam::boolean(tx)},
                 {"transpose_y", MilParam::boolean(false)}},
                F16, std::move(shape));
}

// `tokens` steps on S [1, H, dk, dv]; with `exposed`, each step's recalled
// value is also an output, which leaves nothing to plan.
MilProgram steps(bool exposed) {
    MilProgram p;
    const std::vector<int64_t> rows_k{1, heads, 1, dk}, rows_v{1, heads, 1, dv},
        full{1, heads, dk, dv};
    MilValue s = p.input("s", F16, full);
    for (int64_t t = 0; t < tokens; ++t) {
        const std::string n = "t" + std::to_string(t);
        const MilValue q = p.input(n + "_q", F16, rows_k), k = p.input(n + "_k", F16, rows_k),
                       bk = p.input(n + "_bk", F16, rows_k), v = p.input(n + "_v", F16, rows_v),
                       decay = p.input(n + "_decay", F16, {1, heads, 1, 1});
        const MilValue decayed = p.b.op("mul", n + "_decayed", {{"x", s}, {"y", decay}}, F16, full);
        const MilValue recalled = matmul(p.b, k, decayed, false, rows_v, n + "_recalled");
        const MilValue error =
            p.b.op("sub", n + "_error", {{"x", v}, {"y", recalled}}, F16, rows_v);
        const MilValue write = matmul(p.b, bk, error, true, full, n + "_write");
        s = p.b.op("add", n + "_state", {{"x", decayed}, {"y", write}}, F16, full);
        p.b.output(matmul(p.b, q, s, false, rows_v, n + "_out"));
        if (exposed) p.b.output(recalled);
    }
    p.b.output(s);
    return p;
}

std::map<std::string, Tensor> step_inputs() {
    std::map<std::string, Tensor> in;
    in["s"] = floats(F16, {1, heads, dk, dv}, ramp(heads * dk * dv, 0.3125f));
    for (int64_t t = 0; t < tokens; ++t) {
        const std::string n = "t" + std::to_string(t);
        const float f = 0.0625f * static_cast<float>(t + 1);
        in[n + "_q"] = floats(F16, {1, heads, 1, dk}, ramp(heads * dk, 0.375f + f));
        in[n + "_k"] = floats(F16, {1, heads, 1, dk}, ramp(heads * dk, 0.4375f - f));
        in[n + "_bk"] = floats(F16, {1, heads, 1, dk}, ramp(heads * dk, 0.1875f + f));
        in[n + "_v"] = floats(F16, {1, heads, 1, dv}, ramp(heads * dv, 0.5625f + f));
        // The third head's key is zero past its first value (matmul reads fewer rows).
        for (int64_t i = 1; i < dk; ++i) in[n + "_k"].f[static_cast<size_t>(2 * dk + i)] = 0.0f;
        in[n + "_decay"] = floats(F16, {1, heads, 1, 1}, {0.875f, 0.5f, 1.0f});
    }
    return in;
}

TEST(MilDeltaStep, PlannedStepsGiveTheOpsOutputsBitForBit) {
    const MilProgram planned = steps(false), op_by_op = steps(true);
    for (const Rounding rounding : {Rounding::none, Rounding::f16, Rounding::f16_flush}) {
        SCOPED_TRACE(static_cast<int>(rounding));
        Function a(planned.program, "main", planned.blobs, rounding);
        Function b(op_by_op.program, "main", op_by_op.blobs, rounding);
        EXPECT_EQ(a.delta_steps_planned(), tokens);
        EXPECT_EQ(b.delta_steps_planned(), 0);
        States sa, sb;
        const auto got = a.run(step_inputs(), sa), want = b.run(step_inputs(), sb);
        for (const auto& [name, value] : got) {
            SCOPED_TRACE(name);
            ASSERT_TRUE(want.contains(name));
            EXPECT_EQ(value.shape, want.at(name).shape);
            EXPECT_EQ(value.f, want.at(name).f);
        }
    }
}

}  // namespace
}  // namespace anelm::milexec::test
