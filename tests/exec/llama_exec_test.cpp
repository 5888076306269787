// The CPU executor on tiny Llama-family, Gemma 3 and LFM2 models: batched prefill against
// token-by-token decode, f16 precision against f32, SIMD against scalar.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "base/error.h"
#include "exec/cpu/executor.h"
#include "kernels/kernels.h"
#include "models/models.h"
#include "runtime/session.h"
#include "tiny_model.h"

namespace anelm {
namespace {

using test::random_tokens;
using test::relative_error;

int32_t argmax(std::span<const float> v) {
    return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

class TinyModels : public ::testing::TestWithParam<const char*> {};

TEST_P(TinyModels, PrefillMatchesTokenByTokenDecode) {
    const LoadedModel& m = test::tiny_model(GetParam());
    SessionOptions so;
    so.n_ctx = 64;
    so.threads = 2;
    so.prefill_batch = 16;  // 37 tokens: two full batches and a partial one
    so.all_logits = true;
    Session batched(m.spec, m.weights, so);
    Session stepwise(m.spec, m.weights, so);

    const auto tokens = random_tokens(m.spec.n_vocab, 37, 1);
    const auto logits = batched.prefill(tokens);
    const std::vector<float> all(logits.begin(), logits.end());
    ASSERT_EQ(all.size(), tokens.size() * static_cast<size_t>(m.spec.n_vocab));
    for (size_t t = 0; t < tokens.size(); ++t) {
        const auto step = stepwise.decode(tokens[t]);
        const std::span<const float> row(all.data() + t * m.spec.n_vocab, m.spec.n_vocab);
        EXPECT_LT(relative_error(step, row), 1e-4) << "token " << t;
    }
}

TEST_P(TinyModels, F16PrecisionTracksF32) {
    const LoadedModel& m = test::tiny_model(GetParam());
    SessionOptions so;
    so.n_ctx = 96;
    so.threads = 2;
    Session exact(m.spec, m.weights, so);
    so.precision = Precision::f16;
    Session half(m.spec, m.weights, so);

    const auto prompt = random_tokens(m.spec.n_vocab, 8, 2);
    auto a = exact.prefill(prompt);
    auto b = half.prefill(prompt);
    for (int step = 0; step < 64; ++step) {
        EXPECT_LT(relative_error(b, a), 1e-2) << "step " << step;
        const int32_t next_exact = argmax(a);
        ASSERT_EQ(argmax(b), next_exact) << "greedy tokens differ at step " << step;
        a = exact.decode(next_exact);
        b = half.decode(next_exact);
    }
}

TEST_P(TinyModels, SimdKernelsMatchScalarReference) {
    const LoadedModel& m = test::tiny_model(GetParam());
    SessionOptions so;
    so.n_ctx = 32;
    so.threads = 2;
    const auto tokens = random_tokens(m.spec.n_vocab, 12, 3);
    Session fast(m.spec, m.weights, so);
    const auto fast_logits = fast.prefill(tokens);
    const std::vector<float> simd(fast_logits.begin(), fast_logits.end());
    kernels::force_scalar(true);
    Session slow(m.spec, m.weights, so);
    const auto scalar = slow.prefill(tokens);
    kernels::force_scalar(false);
    EXPECT_LT(relative_error(simd, scalar), 1e-5);
}

// A prompt long enough that the element-wise ops (silu, gelu) are split across
// the threads gives what one thread computes.
TEST_P(TinyModels, LongPromptGivesTheSameLogitsOnOneThreadAndTwo) {
    const LoadedModel& m = test::tiny_model(GetParam());
    ASSERT_GE(531 * m.spec.n_ff, int64_t{1} << 16);
    SessionOptions so;
    so.n_ctx = 544;
    so.prefill_batch = 531;
    so.all_logits = true;
    const auto tokens = random_tokens(m.spec.n_vocab, 531, 4);
    so.threads = 1;
    Session one(m.spec, m.weights, so);
    const auto a = one.prefill(tokens);
    const std::vector<float> serial(a.begin(), a.end());
    so.threads = 2;
    Session two(m.spec, m.weights, so);
    EXPECT_LT(relative_error(two.prefill(tokens), serial), 1e-6);
}

// What the quantization search does: a call stopped at a node, its values
// saved, and the rest run from there (twice, the values put back between)
// gives the whole call's logits.
TEST_P(TinyModels, RunningOnFromASavedNodeGivesTheWholeCall) {
    const LoadedModel& m = test::tiny_model(GetParam());
    ProgramOptions po;
    po.n_ctx = 24;
    po.functions = {{"prefill", po.n_ctx, true}};
    const ir::Program program = build_program(m.spec, m.weights, po);
    ThreadPool pool(2);
    Executor executor(program, pool, Precision::f32);
    const auto tokens = random_tokens(m.spec.n_vocab, 24, 5);
    ExecState whole_state = executor.make_state();
    const auto whole = executor.run(0, tokens, 0, whole_state);
    const std::vector<float> expected(whole.begin(), whole.end());

    const size_t n_nodes = program.functions.front().nodes.size();
    const size_t middle = n_nodes / 2;
    ExecState saved_state = executor.make_state();
    EXPECT_TRUE(executor.run_nodes(0, tokens, 0, saved_state, 0, middle).empty());
    const std::vector<float> saved = executor.values();
    for (int again = 0; again < 2; ++again) {
        executor.restore_values(saved);
        ExecState state = saved_state;
        const auto rest = executor.run_nodes(0, tokens, 0, state, middle, n_nodes);
        ASSERT_EQ(rest.size(), expected.size());
        EXPECT_EQ(std::vector<float>(rest.begin(), rest.end()), expected) << "run " << again;
    }
    EXPECT_THROW(executor.run_nodes(0, tokens, 0, saved_state, middle, n_nodes + 1), Error);
}

INSTANTIATE_TEST_SUITE_P(Exec, TinyModels,
                         ::testing::Values("tiny-llama", "tiny-qwen2", "tiny-qwen3", "tiny-gemma3",
                                           "tiny-lfm2", "tiny-qwen3.5"));

TEST(Exec, ContextOverflowIsAnError) {
    const LoadedModel& m = test::tiny_model("tiny-llama");
    SessionOptions so;
    so.n_ctx = 8;
    so.threads = 1;
    Session s(m.spec, m.weights, so);
    const auto tokens = random_tokens(m.spec.n_vocab, 8, 4);
    s.prefill(tokens);
    EXPECT_THROW(s.decode(1), Error);
}

TEST(Exec, TokenOutsideVocabularyIsAnError) {
    const LoadedModel& m = test::tiny_model("tiny-llama");
    SessionOptions so;
    so.n_ctx = 8;
    so.threads = 1;
    Session s(m.spec, m.weights, so);
    EXPECT_THROW(s.decode(static_cast<int32_t>(m.spec.n_vocab)), Error);
}

}  // namespace
}  // namespace anelm
