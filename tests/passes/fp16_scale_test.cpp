// Residual scaling leaves a model's logits unchanged while shrinking its
// residual stream by exactly alpha.
#include "passes/fp16_scale.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>

#include "base/error.h"
#include "exec/cpu/executor.h"
#include "exec/tiny_model.h"
#include "models/models.h"

namespace anelm {
namespace {

struct PrefillRun {
    std::vector<float> logits;
    std::map<std::string, float> peaks;  // max |value| per node name
};

PrefillRun run_prefill(const ir::Program& program, int64_t n_vocab) {
    ThreadPool pool(2);
    Executor executor(program, pool, Precision::f32);
    PrefillRun run;
    executor.set_observer([&](const ir::Node& node, std::span<const float> value) {
        float peak = 0;
        for (float v : value) peak = std::max(peak, std::abs(v));
        run.peaks[node.name] = peak;
    });
    std::mt19937 rng(3);
    std::vector<int32_t> tokens(13);
    for (int32_t& t : tokens) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab));
    ExecState state = executor.make_state();
    auto logits = executor.run(0, tokens, 0, state);
    run.logits.assign(logits.begin(), logits.end());
    return run;
}

ir::Program tiny_program(const LoadedModel& m) {
    ProgramOptions options;
    options.n_ctx = 32;
    options.functions = {{"prefill", 16, true}, {"decode", 1, false}};
    return build_program(m.spec, m.weights, options);
}

// Runs a tiny model's prefill unscaled and scaled by 1/8: the logits agree
// within 1e-5; the values named in `scaled` shrink by exactly alpha and those
// in `unchanged` do not move.
void expect_scaled_exactly(const char* preset, std::initializer_list<const char*> scaled,
                           std::initializer_list<const char*> unchanged) {
    const LoadedModel& m = test::tiny_model(preset);
    const ir::Program plain = tiny_program(m);
    ir::Program program = plain;
    const float alpha = 1.0f / 8;
    passes::scale_residual(program, alpha);

    const PrefillRun a = run_prefill(plain, m.spec.n_vocab);
    const PrefillRun b = run_prefill(program, m.spec.n_vocab);
    ASSERT_EQ(a.logits.size(), b.logits.size());
    double worst = 0, peak = 0;
    for (size_t i = 0; i < a.logits.size(); ++i) {
        worst = std::max(worst, double(std::abs(a.logits[i] - b.logits[i])));
        peak = std::max(peak, double(std::abs(a.logits[i])));
    }
    EXPECT_LE(worst, 1e-5 * peak);
    for (const char* name : scaled) {
        ASSERT_TRUE(a.peaks.count(name)) << name;
        EXPECT_NEAR(b.peaks.at(name), a.peaks.at(name) * alpha, 1e-5 * a.peaks.at(name)) << name;
    }
    for (const char* name : unchanged) {
        ASSERT_TRUE(a.peaks.count(name)) << name;
        EXPECT_NEAR(b.peaks.at(name), a.peaks.at(name), 1e-5 * a.peaks.at(name)) << name;
    }
}

class ResidualScale : public ::testing::TestWithParam<const char*> {};

// Pre-norm models: the stream and the projections feeding it shrink; what the
// norms produce does not move.
TEST_P(ResidualScale, LogitsUnchangedAndStreamScaled) {
    expect_scaled_exactly(
        GetParam(),
        {"token_embd", "blk.0.ffn_inp", "blk.1.l_out", "blk.0.attn_out", "blk.1.ffn_out"},
        {"blk.1.attn_norm"});
}

INSTANTIATE_TEST_SUITE_P(Tiny, ResidualScale,
                         ::testing::Values("tiny-llama", "tiny-qwen2", "tiny-qwen3"));

// Gemma 3 adds its branches through post-norms: those carry alpha (so that
// (1 + w') = alpha (1 + w) once folded), the projections before them do not.
TEST(ResidualScale, Gemma3PostNormsCarryTheScale) {
    expect_scaled_exactly("tiny-gemma3",
                          {"token_embd_scaled", "blk.0.attn_post_norm", "blk.0.ffn_inp",
                           "blk.1.ffn_post_norm", "blk.1.l_out"},
                          {"blk.0.attn_out", "blk.1.ffn_out", "blk.1.ffn_norm"});
}

TEST(ResidualScale, OnlyPowersOfTwo) {
    const ir::Program program = tiny_program(test::tiny_model("tiny-llama"));
    ir::Program copy = program;
    EXPECT_THROW(passes::scale_residual(copy, 0.3f), Error);
    EXPECT_THROW(passes::scale_residual(copy, 0.0f), Error);
    EXPECT_NO_THROW(passes::scale_residual(copy, 1.0f));
}

TEST(ResidualScale, ScaleForPeak) {
    EXPECT_EQ(passes::residual_scale_for_peak(1000.0), 1.0f);
    EXPECT_EQ(passes::residual_scale_for_peak(16000.0), 1.0f);      // not within 4x of 65,504
    EXPECT_EQ(passes::residual_scale_for_peak(20000.0), 1.0f);      // at risk, but 32768 / peak > 1
    EXPECT_EQ(passes::residual_scale_for_peak(104000.0), 0.25f);    // 32768 / 104000 = 0.315
    EXPECT_EQ(passes::residual_scale_for_peak(293000.0), 0.0625f);  // 0.112
    EXPECT_EQ(passes::residual_scale_for_peak(61000.0, 16384.0), 0.25f);  // 0.269
}

}  // namespace
}  // namespace anelm
