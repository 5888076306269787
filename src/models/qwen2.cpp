// Qwen2 (Qwen2.5): Llama's decoder with a bias on q, k and v.
#include "models/families.h"
#include "models/llama_like_config.h"
#include "models/model_family.h"

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

constexpr std::string_view model_types[] = {"qwen2"};
constexpr std::string_view hf_classes[] = {"Qwen2ForCausalLM"};

}  // namespace

const ModelFamily qwen2_family = {
    .arch = Arch::qwen2,
    .model_types = model_types,
    .hf_classes = hf_classes,
    .gguf_arch = "qwen2",
    .parse_config = parse_qwen2,
    .gguf_tensor_name = llama_gguf_tensor_name,
    .expected_tensors = llama_tensors,
    .synth_fields = qwen2_synth_fields,
    .config_json = qwen2_config_json,
    .build_function = build_llama_function,
};

}  // namespace anelm
