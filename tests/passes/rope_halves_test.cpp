// Reordering the q/k rows turns interleaved rotary pairs into the half-split
// form without changing what the model computes.
#include "passes/rope_halves.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "exec/cpu/executor.h"
#include "exec/tiny_model.h"
#include "models/models.h"

namespace anelm {
namespace {

std::vector<float> prefill_logits(const ir::Program& program, const std::vector<int32_t>& tokens) {
    ThreadPool pool(2);
    Executor executor(program, pool, Precision::f32);
    ExecState state = executor.make_state();
    const auto logits = executor.run(0, tokens, 0, state);
    return {logits.begin(), logits.end()};
}

ir::Program interleaved_program(const char* preset) {
    const LoadedModel& m = test::tiny_model(preset);
    ProgramOptions options;
    options.n_ctx = 32;
    options.functions = {{"prefill", 16, true}, {"decode", 1, false}};
    ir::Program program = build_program(m.spec, m.weights, options);
    for (ir::RopeFreqs& r : program.ropes) r.interleaved = true;
    return program;
}

TEST(RopeHalves, SameLogitsInTheHalfSplitForm) {
    for (const char* preset : {"tiny-llama", "tiny-qwen2"}) {
        SCOPED_TRACE(preset);
        const ir::Program interleaved = interleaved_program(preset);
        ir::Program halves = interleaved;
        passes::rope_halves(halves);
        EXPECT_FALSE(halves.ropes[0].interleaved);
        const auto tokens = test::random_tokens(test::tiny_model(preset).spec.n_vocab, 11, 5);
        const auto a = prefill_logits(interleaved, tokens);
        const auto b = prefill_logits(halves, tokens);
        EXPECT_LT(test::relative_error(a, b), 1e-5);
        // And the rows did move: the half-split form on the original weights differs.
        ir::Program unpermuted = interleaved;
        unpermuted.ropes[0].interleaved = false;
        EXPECT_GT(test::relative_error(a, prefill_logits(unpermuted, tokens)), 1e-3);
    }
}

TEST(RopeHalves, RefusesAQkNormBetweenProjectionAndRope) {
    // Qwen3's q/k norms sit between the projection and the rope.
    ir::Program program = interleaved_program("tiny-qwen3");
    try {
        passes::rope_halves(program);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("not a linear"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace anelm
