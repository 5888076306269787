// Qwen2 (Qwen2.5): Llama's decoder with a bias on q, k and v.
#include "base/error.h"
#include "models/families.h"
#include "models/llama_like_config.h"
#include "models/model_family.h"
#include "models/synth_checks.h"

namespace anelm {

namespace {

using nlohmann::json;

constexpr LlamaLikeConfig qwen2_config = {.refuses_sliding_window = true, .qkv_bias = true};

ModelSpec parse_qwen2(const ConfigFields& top, const std::string& path, ModelSpec spec) {
    return parse_llama_like_config(top, top, path, std::move(spec), qwen2_config);
}

void qwen2_synth_fields(std::string_view, ModelSpec& s) {
    s.attention_bias = true;
}

json qwen2_config_json(const ModelSpec& s) {
    json j = llama_like_config_json(s, qwen2_config);
    j["architectures"] = {"Qwen2ForCausalLM"};
    // transformers derives head_dim from the sizes when the field is absent.
    if (s.head_dim * s.n_head != s.n_embd) j["head_dim"] = s.head_dim;
    j["max_window_layers"] = s.n_layer;
    j["sliding_window"] = s.n_ctx_train;
    j["use_sliding_window"] = false;
    return j;
}

// The Instruct releases (their eos ids and chat template). The tiny one has a
// vocabulary of 648, which 16 LM head pieces do not divide.
constexpr SynthRow qwen2_presets[] = {
    SynthRow{"qwen2.5-0.5b", "Qwen/Qwen2.5-0.5B-Instruct", 896, 24, 14, 2, 64, 4864, 151936, 151643,
             32768, 1e6, 1e-6, true, 0},
    SynthRow{"qwen2.5-1.5b", "Qwen/Qwen2.5-1.5B-Instruct", 1536, 28, 12, 2, 128, 8960, 151936,
             151643, 32768, 1e6, 1e-6, true, 0},
    SynthRow{"tiny-qwen2", "tiny test model, Qwen2.5 layout", 64, 2, 4, 2, 16, 128, 648, 608, 1024,
             1e6, 1e-6, true, 0},
};

void qwen2_check_synth(std::string_view preset, const ModelSpec& s) {
    check_synth_attention(preset, s, {.qkv_bias = true});
    if (s.rope_scaling.type != RopeScaling::Type::none)
        fail("synth: preset {}: qwen2 presets have no rope scaling", preset);
}

constexpr std::string_view model_types[] = {"qwen2"};
constexpr std::string_view hf_classes[] = {"Qwen2ForCausalLM"};

}  // namespace

const ModelFamily qwen2_family = {
    .arch = Arch::qwen2,
    .name = "qwen2",
    .model_types = model_types,
    .hf_classes = hf_classes,
    .gguf_arch = "qwen2",
    .parse_config = parse_qwen2,
    .gguf_tensor_name = llama_gguf_tensor_name,
    .expected_tensors = llama_tensors,
    .synth_rows = qwen2_presets,
    .synth_fields = qwen2_synth_fields,
    .check_synth = qwen2_check_synth,
    .config_json = qwen2_config_json,
    .build_function = build_llama_function,
};

}  // namespace anelm
