// Gemma 3 on the CPU executor: the logits of a tiny model against a plain
// reference written here from the Hugging Face formulas, sliding-window layers
// that provably ignore tokens outside their window, and the `ane` precision
// turning an FP16 overflow into inf and NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <numbers>
#include <random>

#include "base/error.h"
#include "base/half.h"
#include "runtime/session.h"
#include "tiny_model.h"

namespace anelm {
namespace {

using test::PatchedWeights;
using test::random_tokens;

// Every norm gain of the tiny model drawn at random, so that each (1 + w) matters.
PatchedWeights random_gains(const LoadedModel& m, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 0.3f);
    std::map<std::string, std::vector<float>> gains;
    for (const std::string& name : m.weights.names()) {
        if (!name.ends_with("norm.weight")) continue;
        std::vector<float>& gain = gains[name];
        gain.resize(static_cast<size_t>(m.weights.find(name)->numel()));
        for (float& g : gain) g = dist(rng);
    }
    return PatchedWeights(m.weights, std::move(gains));
}

// The Gemma 3 forward pass as transformers' modeling_gemma3 defines it, in
// double, straight from the f32 weights; keys and values are rounded to half as
// the executor's KV cache stores them.
class ReferenceGemma3 {
public:
    ReferenceGemma3(const ModelSpec& spec, const WeightStore& weights) : s_(spec), w_(weights) {}

    // Logits [T, n_vocab] for the tokens at positions 0..T-1.
    std::vector<double> forward(const std::vector<int32_t>& tokens) const {
        const auto T = static_cast<int64_t>(tokens.size());
        const int64_t d = s_.n_embd, hd = s_.head_dim;
        const float* embed = tensor("model.embed_tokens.weight");
        std::vector<std::vector<double>> x(T, std::vector<double>(d));
        for (int64_t t = 0; t < T; ++t)
            for (int64_t i = 0; i < d; ++i)
                x[t][i] = embed[tokens[t] * d + i] * std::sqrt(static_cast<double>(d));

        for (int64_t il = 0; il < s_.n_layer; ++il) {
            const std::string p = "model.layers." + std::to_string(il) + ".";
            const bool sliding = s_.sliding_layers[il];
            std::vector<std::vector<double>> q(T), k(T), v(T);
            for (int64_t t = 0; t < T; ++t) {
                const auto h = norm(x[t], p + "input_layernorm.weight");
                q[t] = linear(h, p + "self_attn.q_proj.weight");
                k[t] = linear(h, p + "self_attn.k_proj.weight");
                v[t] = linear(h, p + "self_attn.v_proj.weight");
                for (int64_t hh = 0; hh < s_.n_head; ++hh)
                    norm_head(q[t], hh * hd, p + "self_attn.q_norm.weight");
                for (int64_t hh = 0; hh < s_.n_head_kv; ++hh) {
                    norm_head(k[t], hh * hd, p + "self_attn.k_norm.weight");
                }
                for (int64_t hh = 0; hh < s_.n_head; ++hh) rotate(q[t], hh * hd, t, sliding);
                for (int64_t hh = 0; hh < s_.n_head_kv; ++hh) rotate(k[t], hh * hd, t, sliding);
                for (double& e : k[t]) e = round_to_f16(static_cast<float>(e));
                for (double& e : v[t]) e = round_to_f16(static_cast<float>(e));
            }
            for (int64_t t = 0; t < T; ++t) {
                std::vector<double> attn(static_cast<size_t>(s_.n_head * hd), 0.0);
                const int64_t first = sliding ? std::max<int64_t>(0, t - s_.sliding_window + 1) : 0;
                for (int64_t hh = 0; hh < s_.n_head; ++hh) {
                    const int64_t kvh = hh / (s_.n_head / s_.n_head_kv);
                    std::vector<double> probs(static_cast<size_t>(t + 1 - first));
                    double max = -INFINITY, sum = 0;
                    for (int64_t j = first; j <= t; ++j) {
                        double dot = 0;
                        for (int64_t e = 0; e < hd; ++e)
                            dot += q[t][hh * hd + e] * k[j][kvh * hd + e];
                        probs[j - first] = dot / std::sqrt(s_.query_pre_attn_scalar);
                        max = std::max(max, probs[j - first]);
                    }
                    for (double& e : probs) sum += (e = std::exp(e - max));
                    for (int64_t j = first; j <= t; ++j)
                        for (int64_t e = 0; e < hd; ++e)
                            attn[hh * hd + e] += probs[j - first] / sum * v[j][kvh * hd + e];
                }
                const auto o = norm(linear(attn, p + "self_attn.o_proj.weight"),
                                    p + "post_attention_layernorm.weight");
                for (int64_t i = 0; i < d; ++i) x[t][i] += o[i];
                const auto h = norm(x[t], p + "pre_feedforward_layernorm.weight");
                const auto gate = linear(h, p + "mlp.gate_proj.weight");
                const auto up = linear(h, p + "mlp.up_proj.weight");
                std::vector<double> act(gate.size());
                for (size_t i = 0; i < act.size(); ++i) {
                    const double g = gate[i];
                    const double inner =
                        std::sqrt(2 / std::numbers::pi) * (g + 0.044715 * g * g * g);
                    act[i] = 0.5 * g * (1 + std::tanh(inner)) * up[i];
                }
                const auto down = norm(linear(act, p + "mlp.down_proj.weight"),
                                       p + "post_feedforward_layernorm.weight");
                for (int64_t i = 0; i < d; ++i) x[t][i] += down[i];
            }
        }
        std::vector<double> logits;
        for (int64_t t = 0; t < T; ++t) {
            const auto row = linear(norm(x[t], "model.norm.weight"), "model.embed_tokens.weight");
            for (double l : row) {
                const double cap = s_.final_logit_softcapping;
                logits.push_back(cap > 0 ? cap * std::tanh(l / cap) : l);
            }
        }
        return logits;
    }

private:
    const float* tensor(const std::string& name) const {
        const TensorView& t = w_.get(name);
        EXPECT_EQ(t.dtype, DType::f32) << name;
        return reinterpret_cast<const float*>(t.data);
    }
    std::vector<double> linear(const std::vector<double>& x, const std::string& name) const {
        const TensorView& t = w_.get(name);
        const float* w = tensor(name);
        const int64_t n_out = t.shape[0], n_in = t.shape[1];
        std::vector<double> y(static_cast<size_t>(n_out), 0.0);
        for (int64_t o = 0; o < n_out; ++o)
            for (int64_t i = 0; i < n_in; ++i) y[o] += w[o * n_in + i] * x[i];
        return y;
    }
    // Gemma3RMSNorm: x / sqrt(mean(x^2) + eps) * (1 + w).
    void norm_span(double* x, int64_t n, const std::string& gain) const {
        const float* g = tensor(gain);
        double ss = 0;
        for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
        const double r = 1 / std::sqrt(ss / n + s_.rms_norm_eps);
        for (int64_t i = 0; i < n; ++i) x[i] = x[i] * r * (1.0 + g[i]);
    }
    std::vector<double> norm(std::vector<double> x, const std::string& gain) const {
        norm_span(x.data(), static_cast<int64_t>(x.size()), gain);
        return x;
    }
    void norm_head(std::vector<double>& x, int64_t at, const std::string& gain) const {
        norm_span(x.data() + at, s_.head_dim, gain);
    }
    // Rotate-half rope; local layers use rope_local_base_freq, global ones rope_theta
    // with linear scaling (positions divided by factor).
    void rotate(std::vector<double>& x, int64_t at, int64_t pos, bool sliding) const {
        const int64_t half = s_.head_dim / 2;
        const double base = sliding ? s_.rope_local_base_freq : s_.rope_theta;
        const double factor = !sliding && s_.rope_scaling.type == RopeScaling::Type::linear
                                  ? s_.rope_scaling.factor
                                  : 1.0;
        for (int64_t i = 0; i < half; ++i) {
            const double angle = pos / factor / std::pow(base, 2.0 * i / s_.head_dim);
            const double a = x[at + i], b = x[at + half + i];
            x[at + i] = a * std::cos(angle) - b * std::sin(angle);
            x[at + half + i] = a * std::sin(angle) + b * std::cos(angle);
        }
    }

    const ModelSpec& s_;
    const WeightStore& w_;
};

SessionOptions options(int64_t n_ctx, bool all_logits) {
    SessionOptions so;
    so.n_ctx = n_ctx;
    so.threads = 2;
    so.all_logits = all_logits;
    return so;
}

TEST(Gemma3, TinyModelHasBothLayerKindsAndEveryOption) {
    const ModelSpec& s = test::tiny_model("tiny-gemma3").spec;
    ASSERT_EQ(s.arch, Arch::gemma3);
    ASSERT_EQ(s.n_layer, 2);
    EXPECT_EQ(s.sliding_layers, (std::vector<bool>{true, false}));
    EXPECT_EQ(s.sliding_window, 8);
    EXPECT_NE(s.query_pre_attn_scalar, static_cast<double>(s.head_dim));
    EXPECT_EQ(s.rope_scaling.type, RopeScaling::Type::linear);
    EXPECT_GT(s.final_logit_softcapping, 0);
}

TEST(Gemma3, LogitsMatchAnIndependentReference) {
    const LoadedModel& m = test::tiny_model("tiny-gemma3");
    const PatchedWeights weights = random_gains(m, 11);
    // Longer than the window, so the sliding layer drops keys.
    const auto tokens = random_tokens(m.spec.n_vocab, 20, 5);
    Session session(m.spec, weights.store(), options(32, true));
    const auto got = session.prefill(tokens);
    const auto want = ReferenceGemma3(m.spec, weights.store()).forward(tokens);
    ASSERT_EQ(got.size(), want.size());
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        num += (got[i] - want[i]) * (got[i] - want[i]);
        den += want[i] * want[i];
    }
    EXPECT_LT(std::sqrt(num / den), 1e-4);
}

// The last token's logits after a prompt whose first tokens vary.
std::vector<float> last_logits(const LoadedModel& m, const ModelSpec& spec,
                               std::vector<int32_t> tokens, int32_t first_token) {
    tokens[0] = first_token;
    Session session(spec, m.weights, options(32, false));
    const auto logits = session.prefill(tokens);
    return {logits.begin(), logits.end()};
}

TEST(Gemma3, SlidingLayersIgnoreTokensOutsideTheirWindow) {
    const LoadedModel& m = test::tiny_model("tiny-gemma3");
    // 20 tokens: with two sliding layers of window 8 the last token reaches back
    // 2 * (8 - 1) = 14 positions, to position 5; token 0 is out of its sight.
    const auto tokens = random_tokens(m.spec.n_vocab, 20, 6);
    ModelSpec all_sliding = m.spec;
    all_sliding.sliding_layers = {true, true};
    EXPECT_EQ(last_logits(m, all_sliding, tokens, 1), last_logits(m, all_sliding, tokens, 2));
    // The model's own second layer is global: there token 0 is seen.
    EXPECT_NE(last_logits(m, m.spec, tokens, 1), last_logits(m, m.spec, tokens, 2));
    // A window covering the prompt sees it too.
    all_sliding.sliding_window = 20;
    EXPECT_NE(last_logits(m, all_sliding, tokens, 1), last_logits(m, all_sliding, tokens, 2));
}

TEST(Gemma3, AnePrecisionTracksF32OnNormalWeights) {
    const LoadedModel& m = test::tiny_model("tiny-gemma3");
    const auto tokens = random_tokens(m.spec.n_vocab, 12, 7);
    Session exact(m.spec, m.weights, options(32, false));
    SessionOptions so = options(32, false);
    so.precision = Precision::ane;
    Session ane(m.spec, m.weights, so);
    const auto a = exact.prefill(tokens);
    const std::vector<float> want(a.begin(), a.end());
    const auto got = ane.prefill(tokens);
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        num += (got[i] - want[i]) * double(got[i] - want[i]);
        den += want[i] * double(want[i]);
    }
    EXPECT_LT(std::sqrt(num / den), 1e-2);
}

TEST(Gemma3, AnePrecisionOverflowsToInfThenNaN) {
    const LoadedModel& m = test::tiny_model("tiny-gemma3");
    // A post-MLP gain of 1e5 pushes the residual stream past 65,504.
    const PatchedWeights weights(m.weights,
                                 {{"model.layers.1.post_feedforward_layernorm.weight",
                                   std::vector<float>(static_cast<size_t>(m.spec.n_embd), 1e5f)}});
    const auto tokens = random_tokens(m.spec.n_vocab, 6, 8);

    Session exact(m.spec, weights.store(), options(16, false));
    for (float l : exact.prefill(tokens)) ASSERT_TRUE(std::isfinite(l));

    SessionOptions so = options(16, false);
    so.precision = Precision::ane;
    Session ane(m.spec, weights.store(), so);
    bool residual_inf = false;
    ane.executor().set_observer([&](const ir::Node& node, std::span<const float> value) {
        if (node.name == "blk.1.l_out")
            for (float x : value) residual_inf |= std::isinf(x);
    });
    bool any_nan = false;
    for (float l : ane.prefill(tokens)) any_nan |= std::isnan(l);
    EXPECT_TRUE(residual_inf);
    // The final norm meets inf: mean(x^2) = inf, 1/sqrt = 0, and inf * 0 is NaN.
    EXPECT_TRUE(any_nan);
}

}  // namespace
}  // namespace anelm
