// The delta rule's step as the ANE lowering writes it (mul, matmul, sub,
// matmul, add, matmul per token) runs as one planned kernel: its outputs are
// those of running the same ops one by one, bit for bit, in each rounding;
// so are those of layers' states carried in one input and updated in place.
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

// One step on S [1, H, dk, dv] with the rows of inputs named `n`_q, _k, ...;
// returns the new state. With `exposed`, the recalled value is also an
// output, which leaves nothing to plan.
MilValue step(MilProgram& p, const MilValue& s, const std::string& n, bool exposed) {
    const std::vector<int64_t> rows_k{1, heads, 1, dk}, rows_v{1, heads, 1, dv},
        full{1, heads, dk, dv};
    const MilValue q = p.input(n + "_q", F16, rows_k), k = p.input(n + "_k", F16, rows_k),
                   bk = p.input(n + "_bk", F16, rows_k), v = p.input(n + "_v", F16, rows_v),
                   decay = p.input(n + "_decay", F16, {1, heads, 1, 1});
    const MilValue decayed = p.b.op("mul", n + "_decayed", {{"x", s}, {"y", decay}}, F16, full);
    const MilValue recalled = matmul(p.b, k, decayed, false, rows_v, n + "_recalled");
    const MilValue error = p.b.op("sub", n + "_error", {{"x", v}, {"y", recalled}}, F16, rows_v);
    const MilValue write = matmul(p.b, bk, error, true, full, n + "_write");
    const MilValue next = p.b.op("add", n + "_state", {{"x", decayed}, {"y", write}}, F16, full);
    p.b.output(matmul(p.b, q, next, false, rows_v, n + "_out"));
    if (exposed) p.b.output(recalled);
    return next;
}

// `tokens` steps on S [1, H, dk, dv].
MilProgram steps(bool exposed) {
    MilProgram p;
    MilValue s = p.input("s", F16, {1, heads, dk, dv});
    for (int64_t t = 0; t < tokens; ++t) s = step(p, s, "t" + std::to_string(t), exposed);
    p.b.output(s);
    return p;
}

// The states of `tokens` layers carried as one input [layers, H, dk, dv], as
// the hybrid folders carry them: each layer's block sliced, stepped `per_layer`
// times (a prefill's tokens), and the new states concatenated into the output.
// With `exposed`, the steps are not planned, so nothing is updated in place.
MilProgram layers(int64_t per_layer, bool exposed) {
    MilProgram p;
    const MilValue all = p.input("s", F16, {tokens, heads, dk, dv});
    std::vector<MilValue> next;
    for (int32_t l = 0; l < tokens; ++l) {
        MilValue s = p.b.op("slice_by_index", "in" + std::to_string(l),
                            {{"x", all},
                             {"begin", MilParam::i32s({l, 0, 0, 0})},
                             {"end", MilParam::i32s({l + 1, heads, dk, dv})}},
                            F16, {1, heads, dk, dv});
        for (int64_t t = 0; t < per_layer; ++t)
            s = step(p, s, "t" + std::to_string(l * per_layer + t), exposed);
        next.push_back(s);
    }
    p.b.output(p.b.op(
        "concat", "s_out",
        {{"values", next}, {"axis", MilParam::i32(0)}, {"interleave", MilParam::boolean(false)}},
        F16, {tokens, heads, dk, dv}));
    return p;
}

// The rows of `n` steps, and a state for one.
std::map<std::string, Tensor> step_inputs(int64_t n = tokens) {
    std::map<std::string, Tensor> in;
    in["s"] = floats(F16, {1, heads, dk, dv}, ramp(heads * dk * dv, 0.3125f));
    for (int64_t t = 0; t < n; ++t) {
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

// Every output of `got` is `want`'s, bit for bit.
void expect_same(const std::map<std::string, Tensor>& got,
                 const std::map<std::string, Tensor>& want) {
    for (const auto& [name, value] : got) {
        SCOPED_TRACE(name);
        ASSERT_TRUE(want.contains(name));
        EXPECT_EQ(value.shape, want.at(name).shape);
        EXPECT_EQ(value.f, want.at(name).f);
    }
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
        expect_same(a.run(step_inputs(), sa), b.run(step_inputs(), sb));
    }
}

TEST(MilDeltaStep, CarriedLayersUpdatedInPlaceGiveTheOpsOutputs) {
    for (const int64_t per_layer : {1, 3})
        for (const Rounding rounding : {Rounding::none, Rounding::f16}) {
            SCOPED_TRACE(per_layer * 10 + static_cast<int>(rounding));
            const MilProgram planned = layers(per_layer, false), op_by_op = layers(per_layer, true);
            Function a(planned.program, "main", planned.blobs, rounding);
            Function b(op_by_op.program, "main", op_by_op.blobs, rounding);
            EXPECT_EQ(a.carried_states_planned(), 1);
            EXPECT_EQ(b.carried_states_planned(), 0);
            std::map<std::string, Tensor> in = step_inputs(tokens * per_layer);
            in["s"] = floats(F16, {tokens, heads, dk, dv}, ramp(tokens * heads * dk * dv, 0.0625f));
            const Tensor given = in.at("s");
            States sa, sb;
            auto got = a.run(in, sa), want = b.run(in, sb);
            // An input passed by reference is the caller's still.
            EXPECT_EQ(in.at("s").f, given.f);
            expect_same(got, want);
            // The next call carries the returned state, moved in as the pipeline does.
            in["s"] = std::move(got.at("s_out"));
            std::map<std::string, Tensor> again = in;
            again["s"] = want.at("s_out");
            expect_same(a.run(std::move(in), sa), b.run(std::move(again), sb));
        }
}

}  // namespace
}  // namespace anelm::milexec::test
