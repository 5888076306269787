// The Gemma 3 presets: real shapes with their published parameter counts, and a
// tiny folder whose config.json reads back to the same Gemma 3 fields.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "models/model_loader.h"
#include "synth/synth.h"
#include "test_support.h"

namespace anelm {
namespace {

namespace fs = std::filesystem;

TEST(SynthGemma3, RealPresetsHaveThePublishedParameterCounts) {
    // Tied embeddings, so the files hold no lm_head.
    EXPECT_EQ(synth_param_count(synth_preset("gemma-3-270m")), 268098176);
    EXPECT_EQ(synth_param_count(synth_preset("gemma-3-1b")), 999885952);
    const ModelSpec s = synth_preset("gemma-3-4b").spec;
    EXPECT_EQ(s.n_vocab, 262208);
    EXPECT_EQ(s.sliding_window, 1024);
    EXPECT_EQ(s.rope_scaling.type, RopeScaling::Type::linear);
    EXPECT_EQ(s.rope_scaling.factor, 8.0);
    EXPECT_EQ(synth_preset("gemma-3-1b").spec.sliding_window, 512);
    EXPECT_EQ(synth_preset("gemma-3-270m").spec.sliding_layers[5], false);
    EXPECT_EQ(synth_preset("gemma-3-270m").spec.sliding_layers[4], true);
}

TEST(SynthGemma3, TinyFolderReadsBackWithItsGemmaFields) {
    const fs::path root = test::temp_dir("synth_gemma3");
    const fs::path dir = root / "tiny-gemma3";
    SynthOptions options;
    options.dtype = DType::f32;
    const SynthPreset preset = synth_preset("tiny-gemma3");
    synth_write(preset, dir.string(), options);

    std::ifstream in(dir / "config.json");
    const nlohmann::json c = nlohmann::json::parse(in);
    EXPECT_EQ(c["model_type"], "gemma3_text");
    EXPECT_EQ(c["hidden_activation"], "gelu_pytorch_tanh");
    EXPECT_FALSE(c.contains("hidden_act"));
    EXPECT_EQ(c["layer_types"], (nlohmann::json{"sliding_attention", "full_attention"}));

    const LoadedModel m = load_model(dir.string());
    const ModelSpec& want = preset.spec;
    EXPECT_EQ(m.spec.arch, Arch::gemma3);
    EXPECT_EQ(m.spec.sliding_layers, want.sliding_layers);
    EXPECT_EQ(m.spec.sliding_window, want.sliding_window);
    EXPECT_EQ(m.spec.query_pre_attn_scalar, want.query_pre_attn_scalar);
    EXPECT_EQ(m.spec.rope_local_base_freq, want.rope_local_base_freq);
    EXPECT_EQ(m.spec.rope_scaling.type, want.rope_scaling.type);
    EXPECT_EQ(m.spec.rope_scaling.factor, want.rope_scaling.factor);
    EXPECT_EQ(m.spec.final_logit_softcapping, want.final_logit_softcapping);
    EXPECT_EQ(m.spec.bos_token_id, want.bos_token_id);
    EXPECT_EQ(m.spec.eos_token_ids, want.eos_token_ids);
    EXPECT_TRUE(m.spec.qk_norm);

    // Gemma's norms scale by 1 + w: transformers initialises w to zero.
    const TensorView& gain = m.weights.get("model.layers.0.pre_feedforward_layernorm.weight");
    ASSERT_EQ(gain.dtype, DType::f32);
    for (int64_t i = 0; i < gain.numel(); ++i)
        ASSERT_EQ(reinterpret_cast<const float*>(gain.data)[i], 0.0f);
    fs::remove_all(root);
}

}  // namespace
}  // namespace anelm
