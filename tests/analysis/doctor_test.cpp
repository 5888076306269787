// The FP16 doctor on tiny models: quiet on healthy ones; on one built to
// overflow, it names the layer, the half-precision run breaks, and the alpha it
// computes restores f32's tokens.
#include "analysis/doctor.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>

#include "analysis/doctor_report.h"
#include "base/error.h"
#include "exec/tiny_model.h"
#include "models/models.h"
#include "passes/fp16_scale.h"

namespace anelm {
namespace {

std::vector<DoctorPrompt> random_prompts(int64_t n_vocab) {
    std::mt19937 rng(11);
    std::vector<DoctorPrompt> prompts;
    for (const char* name : {"a", "b"}) {
        DoctorPrompt p{name, std::vector<int32_t>(24)};
        for (int32_t& t : p.tokens)
            t = static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab));
        prompts.push_back(std::move(p));
    }
    return prompts;
}

DoctorReport doctor(const LoadedModel& m, const WeightStore& weights,
                    Precision device = Precision::f16) {
    DoctorOptions options;
    options.threads = 2;
    options.device = device;
    return run_doctor(m.spec, weights, random_prompts(m.spec.n_vocab), options);
}

const ValuePeak& value(const DoctorReport& r, const std::string& name) {
    for (const ValuePeak& v : r.values)
        if (v.name == name) return v;
    throw Error("no value " + name);
}

// The model's weights with element i of one f32 tensor replaced by edit(w, i).
template <typename Edit>
test::PatchedWeights with_edited(const WeightStore& base, const std::string& target, Edit edit) {
    std::vector<float> values = test::tensor_values(base, target);
    for (size_t i = 0; i < values.size(); ++i) values[i] = edit(values[i], i);
    return test::PatchedWeights(base, {{target, std::move(values)}});
}

// Greedy tokens of a program (prefill, then decode one token at a time).
std::vector<int32_t> greedy(const ir::Program& program, Precision precision,
                            std::vector<int32_t> tokens, int steps) {
    ThreadPool pool(2);
    Executor executor(program, pool, precision);
    ExecState state = executor.make_state();
    auto logits = executor.run(0, tokens, 0, state);
    std::vector<int32_t> out;
    for (int s = 0; s < steps; ++s) {
        const auto next =
            static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        out.push_back(next);
        logits = executor.run(1, {&next, 1}, static_cast<int64_t>(tokens.size()) + s, state);
    }
    return out;
}

// Greedy generation in half precision: 24 tokens unlike f32's unscaled, and
// exactly f32's with the residual scaled by alpha.
void expect_alpha_restores_greedy_tokens(const LoadedModel& m, const WeightStore& weights,
                                         float alpha, Precision device) {
    ProgramOptions po;
    po.n_ctx = 64;
    po.functions = {{"prefill", 24, false}, {"decode", 1, false}};
    const ir::Program plain = build_program(m.spec, weights, po);
    ir::Program scaled = plain;
    passes::scale_residual(scaled, alpha);
    const auto prompt = random_prompts(m.spec.n_vocab)[0].tokens;
    const auto want = greedy(plain, Precision::f32, prompt, 24);
    EXPECT_NE(greedy(plain, device, prompt, 24), want);
    EXPECT_EQ(greedy(scaled, device, prompt, 24), want);
}

class HealthyModels : public ::testing::TestWithParam<const char*> {};

TEST_P(HealthyModels, NothingFlaggedAndAlphaIsOne) {
    const LoadedModel& m = test::tiny_model(GetParam());
    const DoctorReport r = doctor(m, m.weights);
    EXPECT_EQ(r.tokens, 48);
    EXPECT_LT(r.residual_peak, 65504.0 / 4);
    for (const ValuePeak& v : r.values) EXPECT_FALSE(v.at_risk) << v.name << " " << v.peak;
    EXPECT_EQ(r.alpha, 1.0f);
    EXPECT_FALSE(r.unscaled.non_finite);
    EXPECT_GE(r.unscaled.top1_agree, r.unscaled.tokens * 9 / 10);
    EXPECT_EQ(r.scaled.top1_agree, r.unscaled.top1_agree);  // alpha 1: the same program
    // Every layer's attention scores were measured.
    for (const LayerPeaks& l : r.layers) EXPECT_GT(l.attention_scores, 0) << l.layer;
    EXPECT_EQ(r.layers.size(), static_cast<size_t>(m.spec.n_layer));
}

INSTANTIATE_TEST_SUITE_P(Tiny, HealthyModels,
                         ::testing::Values("tiny-llama", "tiny-qwen3", "tiny-gemma3",
                                           "tiny-gemma4"));

TEST(Doctor, FindsTheOverflowingLayerAndScalingFixesIt) {
    const LoadedModel& m = test::tiny_model("tiny-llama");
    const int64_t last = m.spec.n_layer - 1;
    const std::string down = fmt::format("model.layers.{}.mlp.down_proj.weight", last);
    const std::string ffn_out = fmt::format("blk.{}.ffn_out", last);
    // Grow the last MLP's output to about 200,000: 3x past FP16's largest value.
    const double natural = value(doctor(m, m.weights), ffn_out).peak;
    ASSERT_GT(natural, 0);
    const auto factor = static_cast<float>(2e5 / natural);
    const auto loud = with_edited(m.weights, down, [&](float w, size_t) { return w * factor; });

    const DoctorReport r = doctor(m, loud.store());
    EXPECT_TRUE(value(r, ffn_out).overflows);
    EXPECT_TRUE(value(r, fmt::format("blk.{}.l_out", last)).overflows);
    EXPECT_FALSE(value(r, "blk.0.l_out").at_risk);
    EXPECT_GT(r.residual_peak, 65504);
    EXPECT_GT(r.layers[last].residual, 65504);

    // Unscaled, the half-precision run breaks in that layer.
    EXPECT_EQ(r.unscaled.first_layer, last);
    EXPECT_EQ(r.unscaled.first_value, ffn_out);
    EXPECT_TRUE(r.unscaled.non_finite || r.unscaled.top1_agree < r.unscaled.tokens);

    // Scaled by a power of two that brings the peak under the target, it agrees with f32.
    EXPECT_LT(r.alpha, 1.0f);
    EXPECT_LE(r.residual_peak * r.alpha, 32768);
    EXPECT_GT(r.residual_peak * r.alpha * 2, 32768);
    EXPECT_LT(r.layers[last].residual_scaled, 65504);
    EXPECT_FALSE(r.scaled.non_finite);
    EXPECT_GE(r.scaled.top1_agree, r.scaled.tokens * 9 / 10);
    EXPECT_LT(r.scaled.max_logit_error, 1e-2);

    expect_alpha_restores_greedy_tokens(m, loud.store(), r.alpha, Precision::f16);

    // The reports say so.
    const auto j = doctor_json(r);
    EXPECT_EQ(j["schema"], "anelm.doctor/1");
    EXPECT_EQ(j["unscaled"]["first_divergence"]["layer"], last);
    EXPECT_EQ(j["layers"].size(), static_cast<size_t>(m.spec.n_layer));
    const std::string html = doctor_html(r);
    EXPECT_NE(html.find("<svg"), std::string::npos);
    EXPECT_NE(html.find("65,504"), std::string::npos);
    EXPECT_NE(html.find(ffn_out), std::string::npos);
    EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // no outside assets
}

// Gemma 3 adds its MLP through a post-norm whose gain (1 + w) sets the branch's
// size. In the last layer, one output channel of the MLP is made to dominate
// (so the norm's output peaks near sqrt(n_embd) there) and the gain is 30,000,
// itself within FP16's range as a stored weight: the branch reaches about
// 240,000 and the stream overflows there, and alpha scales that gain.
TEST(Doctor, Gemma3OverflowInAnePrecision) {
    const LoadedModel& m = test::tiny_model("tiny-gemma3");
    const int64_t last = m.spec.n_layer - 1;
    const std::string post_norm = fmt::format("blk.{}.ffn_post_norm", last);
    const std::string layer = fmt::format("model.layers.{}.", last);
    const auto n_ff = static_cast<size_t>(m.spec.n_ff);
    const auto one_channel = with_edited(m.weights, layer + "mlp.down_proj.weight",
                                         [&](float w, size_t i) { return i < n_ff ? w * 100 : w; });
    const auto loud = with_edited(one_channel.store(), layer + "post_feedforward_layernorm.weight",
                                  [](float, size_t) { return 29999.0f; });

    const DoctorReport r = doctor(m, loud.store(), Precision::ane);
    EXPECT_TRUE(value(r, post_norm).overflows);
    EXPECT_FALSE(value(r, "blk.0.l_out").at_risk);
    EXPECT_EQ(r.unscaled.first_layer, last);
    EXPECT_EQ(r.unscaled.first_value, post_norm);
    EXPECT_TRUE(r.unscaled.non_finite || r.unscaled.top1_agree < r.unscaled.tokens);
    EXPECT_LT(r.alpha, 1.0f);
    EXPECT_FALSE(r.scaled.non_finite);
    EXPECT_LT(r.layers[last].residual_scaled, 65504);
    expect_alpha_restores_greedy_tokens(m, loud.store(), r.alpha, Precision::ane);
}

// Qwen3.5's delta rules: the softplus reach of each layer (a dt_bias of 14
// in layer 0 takes it past fp16's overflow at 11), and the share of the state
// that half precision would flush, far smaller as convert stores it (x 64).
// Only `ane` flushes: its device run departs from f32 where f16's does not.
TEST(Doctor, DeltaRuleHazards) {
    const LoadedModel& m = test::tiny_model("tiny-qwen3.5");
    const auto patched = with_edited(m.weights, "model.layers.0.linear_attn.dt_bias",
                                     [](float, size_t) { return 14.0f; });
    const DoctorReport r = doctor(m, patched.store(), Precision::ane);
    EXPECT_GT(value(r, "blk.0.softplus_input").peak, 11.0);
    EXPECT_LT(value(r, "blk.1.softplus_input").peak, 11.0);
    const ValuePeak& state = value(r, "blk.1.delta_state");
    const ValuePeak& stored = value(r, "blk.1.delta_state_boosted");
    EXPECT_EQ(state.kind, "recurrent_state");
    EXPECT_GT(state.subnormal, 0.05);
    EXPECT_LT(stored.subnormal, state.subnormal / 4);
    const std::string text = doctor_text(r);
    EXPECT_NE(text.find("an fp16 softplus overflows above 11"), std::string::npos) << text;
    EXPECT_NE(text.find("blk.1.delta_state "), std::string::npos) << text;
    EXPECT_EQ(doctor_json(r)["values"][0].count("subnormal"), 1u);
    EXPECT_FALSE(r.unscaled.first_value.empty());
    EXPECT_TRUE(doctor(m, patched.store(), Precision::f16).unscaled.first_value.empty());
}

TEST(Doctor, EmptyPromptIsAnError) {
    const LoadedModel& m = test::tiny_model("tiny-llama");
    EXPECT_THROW(run_doctor(m.spec, m.weights, {{"empty", {}}}, {}), Error);
    EXPECT_THROW(run_doctor(m.spec, m.weights, {}, {}), Error);
}

TEST(Doctor, CalibrationTexts) {
    const auto texts = default_calibration_texts();
    ASSERT_EQ(texts.size(), 4u);
    for (const auto& t : texts) EXPECT_FALSE(t.text.empty()) << t.name;
}

}  // namespace
}  // namespace anelm
