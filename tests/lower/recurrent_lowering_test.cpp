// LFM2 and Qwen3.5 lowered for the ANE: the KV cache the one MLState, the conv
// windows and delta-rule states carried as function inputs and outputs, and
// the numerics rewrites against the Neural Engine's fp16 failure modes.
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "base/half.h"
#include "exec/mil/function.h"
#include "exec/tiny_model.h"
#include "lower/function_lowering.h"
#include "lower/lowering_support.h"
#include "runtime/session.h"

namespace anelm {
namespace {

using test::argmax;
using test::decode_program;
using test::lower_all;
using test::lowering_ctx;
using test::lowering_options;
using test::pipeline;

class RecurrentLoweringTest : public testing::TestWithParam<const char*> {};

SessionOptions session_options(Precision precision) {
    SessionOptions so;
    so.n_ctx = lowering_ctx;
    so.prefill_batch = 8;
    so.precision = precision;
    return so;
}

// An 11-token prompt (two prefill batches, three infer calls) and 8 decoded
// tokens give the f32 executor's logits: the windows and states the packages
// hand from call to call are the executor's.
TEST_P(RecurrentLoweringTest, MatchesTheProgramInF32) {
    EXPECT_LT(test::f32_lowering_error(test::tiny_model(GetParam())), 1e-2);
}

// After a prompt, the windows the packages carry are the last K - 1 conv
// inputs the executor keeps by position, and the delta-rule states are the
// executor's (times the value boost), layer by layer across the chunks.
TEST_P(RecurrentLoweringTest, CarriedStatesAreTheExecutorsStates) {
    const LoadedModel& m = test::tiny_model(GetParam());
    const ir::Program program = decode_program(m);
    const lower::AneOptions options = lowering_options(false);
    const test::Lowered l = lower_all(program, m.spec.n_vocab, options);
    AnePipeline ane = pipeline(l, false, milexec::Rounding::none);
    Session cpu(m.spec, m.weights, session_options(Precision::f32));
    const auto prompt = test::random_tokens(m.spec.n_vocab, 11, 3);
    ane.prefill(prompt);
    cpu.prefill(prompt);
    const auto n = static_cast<int64_t>(prompt.size());
    // The chunks' stacks one after the other: every layer in order.
    std::map<std::string, std::vector<float>> stacked;
    std::map<std::string, std::vector<int64_t>> layer_shape;
    for (size_t c = 0; c < l.chunks.size(); ++c)
        for (const auto& [name, t] : ane.carried(c)) {
            stacked[name].insert(stacked[name].end(), t.f.begin(), t.f.end());
            layer_shape[name].assign(t.shape.begin() + 1, t.shape.end());
        }
    ASSERT_TRUE(stacked.contains("conv_state"));
    const ir::StateDecl& history = program.states.at(1);  // [layers, 1, n_ctx, C]
    const std::vector<uint16_t>& kept = cpu.state().buffers.at(1);
    const int64_t ch = layer_shape["conv_state"][0], w = layer_shape["conv_state"][2];
    ASSERT_EQ(ch, history.shape[3]);
    std::vector<float> got_windows, want_windows;
    for (int64_t layer = 0; layer < history.shape[0]; ++layer)
        for (int64_t c = 0; c < ch; ++c)
            for (int64_t j = 0; j < w; ++j) {
                got_windows.push_back(
                    stacked["conv_state"][static_cast<size_t>((layer * ch + c) * w + j)]);
                const int64_t pos = n - w + j;
                want_windows.push_back(f16_to_f32(
                    kept[static_cast<size_t>((layer * history.shape[2] + pos) * ch + c)]));
            }
    EXPECT_LT(test::relative_error(got_windows, want_windows), 2e-3);
    if (!stacked.contains("delta_state")) return;
    const ir::StateDecl& ring = program.states.at(2);  // [layers, 1, slots, per layer]
    const int64_t slots = ring.shape[2], per = ring.shape[3];
    const auto* states = reinterpret_cast<const float*>(cpu.state().buffers.at(2).data());
    const std::vector<float>& got = stacked["delta_state"];
    ASSERT_EQ(std::ssize(got), ring.shape[0] * per);
    std::vector<float> got_states, want_states;
    for (int64_t layer = 0; layer < ring.shape[0]; ++layer)
        for (int64_t i = 0; i < per; ++i) {
            got_states.push_back(got[static_cast<size_t>(layer * per + i)] /
                                 options.numerics.delta_v_boost);
            want_states.push_back(states[(layer * slots + (n - 1) % slots) * per + i]);
        }
    EXPECT_LT(test::relative_error(got_states, want_states), 2e-3);
}

// The delta rule's state in fp16 with subnormals flushed, as the ANE holds
// it: with the q/v boosts, fewer of its entries are lost to zero and it is
// closer to the executor's f32 state than without them.
TEST(RecurrentLowering, DeltaBoostsKeepTheStateOutOfSubnormals) {
    const LoadedModel& m = test::tiny_model("tiny-qwen3.5");
    const ir::Program program = decode_program(m);
    Session cpu(m.spec, m.weights, session_options(Precision::f32));
    const auto prompt = test::random_tokens(m.spec.n_vocab, 11, 3);
    cpu.prefill(prompt);
    const ir::StateDecl& ring = program.states.at(2);
    const int64_t slots = ring.shape[2], per = ring.shape[3];
    const auto* states = reinterpret_cast<const float*>(cpu.state().buffers.at(2).data());
    std::vector<float> want;
    for (int64_t layer = 0; layer < ring.shape[0]; ++layer)
        for (int64_t i = 0; i < per; ++i)
            want.push_back(states[(layer * slots + (std::ssize(prompt) - 1) % slots) * per + i]);

    struct Result {
        double error;
        int64_t lost;  // nonzero in f32, zero in the packages
    };
    auto run = [&](const lower::AneNumerics& numerics) {
        lower::AneOptions options = lowering_options(false);
        options.numerics = numerics;
        const test::Lowered l = lower_all(program, m.spec.n_vocab, options);
        AnePipeline ane = pipeline(l, false, milexec::Rounding::f16_flush);
        ane.prefill(prompt);
        std::vector<float> got;
        for (size_t c = 0; c < l.chunks.size(); ++c)
            if (ane.carried(c).contains("delta_state"))
                for (float v : ane.carried(c).at("delta_state").f)
                    got.push_back(v / numerics.delta_v_boost);
        Result r{test::relative_error(got, want), 0};
        for (size_t i = 0; i < got.size(); ++i) r.lost += got[i] == 0.0f && want[i] != 0.0f;
        return r;
    };
    lower::AneNumerics plain;
    plain.delta_q_boost = plain.delta_v_boost = 1.0f;
    const Result boosted = run({}), unboosted = run(plain);
    EXPECT_GT(unboosted.lost, 0);
    EXPECT_LT(boosted.lost, unboosted.lost / 4);
    EXPECT_LT(boosted.error, unboosted.error);
}

// In half precision, with the ANE's subnormals flushed, the packages
// greedy-decode the tokens the CPU decodes in its ANE precision, to the end
// of the context.
TEST_P(RecurrentLoweringTest, SameGreedyTokensInF16) {
    test::expect_same_greedy_tokens(test::tiny_model(GetParam()), milexec::Rounding::f16_flush, 9);
}

// The monolithic form carries the same states and computes the same.
TEST_P(RecurrentLoweringTest, MonolithicMatchesSplit) {
    test::expect_monolithic_matches_split(test::tiny_model(GetParam()));
}

// Every chunk function declares the KV cache as its one MLState (none where
// the chunk holds no attention layer would still be one) and the carried
// states as inputs with outputs of the same shape; the conv taps stay fp16
// even when the linear weights are palettized.
TEST_P(RecurrentLoweringTest, OneMLStateAndCarriedInputsWithMatchingOutputs) {
    const LoadedModel& m = test::tiny_model(GetParam());
    const ir::Program program = decode_program(m);
    const test::Lowered l = lower_all(program, m.spec.n_vocab, lowering_options(false));
    int carried_total = 0;
    for (const lower::AnePackage& chunk : l.chunks)
        for (const auto& fd : chunk.model.description().functions()) {
            EXPECT_LE(fd.state_size(), 1) << fd.name();
            for (const auto& in : fd.input()) {
                const std::string& name = in.name();
                if (name != "conv_state" && name != "delta_state") continue;
                ++carried_total;
                const auto out = std::ranges::find_if(
                    fd.output(), [&](const auto& o) { return o.name() == name + "_out"; });
                ASSERT_NE(out, fd.output().end()) << fd.name() << " " << name;
                EXPECT_EQ(out->type().multiarraytype().shape_size(),
                          in.type().multiarraytype().shape_size());
                for (int d = 0; d < in.type().multiarraytype().shape_size(); ++d)
                    EXPECT_EQ(out->type().multiarraytype().shape(d),
                              in.type().multiarraytype().shape(d));
            }
        }
    EXPECT_GT(carried_total, 0);
}

// Carried states hold the latest position only: the packages restart but do
// not step back, and refuse verify functions, which need every row's state.
TEST_P(RecurrentLoweringTest, NoRewindAndNoVerify) {
    const LoadedModel& m = test::tiny_model(GetParam());
    const ir::Program program = decode_program(m);
    EXPECT_THROW(lower_all(program, m.spec.n_vocab, lowering_options(false, 4)), Error);
    const test::Lowered l = lower_all(program, m.spec.n_vocab, lowering_options(false));
    AnePipeline ane = pipeline(l, false, milexec::Rounding::f16);
    const auto prompt = test::random_tokens(m.spec.n_vocab, 6, 9);
    const int32_t first = argmax(ane.prefill(prompt));
    EXPECT_FALSE(ane.can_rewind(3));
    EXPECT_THROW(ane.rewind(3), Error);
    ane.rewind(0);
    EXPECT_EQ(argmax(ane.prefill(prompt)), first);  // a restart starts from zeros again
}

// A call that fails inside a function (the monolithic form looks a token up
// past the vocabulary) has moved the carried states into it: the pipeline
// restarts, so the next prompt starts from zeros, not from states that are gone.
TEST_P(RecurrentLoweringTest, AFailedCallRestarts) {
    const LoadedModel& m = test::tiny_model(GetParam());
    const ir::Program program = decode_program(m);
    const test::Lowered l = lower_all(program, m.spec.n_vocab, lowering_options(false));
    const lower::AnePackage mono =
        lower::lower_monolithic(program, l.pieces, lowering_options(false));
    AnePipeline ane(test::part(mono), {lowering_ctx, test::lowering_batch, l.pieces, false},
                    milexec::Rounding::f16);
    const auto prompt = test::random_tokens(m.spec.n_vocab, 6, 9);
    const int32_t first = argmax(ane.prefill(prompt));
    ane.rewind(0);
    ane.prefill(prompt);
    EXPECT_THROW(ane.decode(static_cast<int32_t>(m.spec.n_vocab) + 7), Error);
    EXPECT_EQ(ane.pos(), 0);
    EXPECT_EQ(argmax(ane.prefill(prompt)), first);
}

INSTANTIATE_TEST_SUITE_P(Hybrid, RecurrentLoweringTest,
                         testing::Values("tiny-lfm2", "tiny-qwen3.5"), [](const auto& info) {
                             std::string s = info.param;
                             std::ranges::replace_if(
                                 s, [](char c) { return !std::isalnum(c); }, '_');
                             return s;
                         });

}  // namespace
}  // namespace anelm
