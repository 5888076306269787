// Qwen3: Llama's decoder with an RMSNorm on each head of q and k.
#include "models/families.h"
#include "models/llama_like_config.h"
#include "models/model_family.h"
#include "models/synth_checks.h"

namespace anelm {

namespace {

using nlohmann::json;

constexpr LlamaLikeConfig qwen3_config = {
    .refuses_sliding_window = true, .head_dim_required = true, .qk_norm = true};

ModelSpec parse_qwen3(const ConfigFields& top, const std::string& path, ModelSpec spec) {
    return parse_llama_like_config(top, top, path, std::move(spec), qwen3_config);
}

void qwen3_synth_fields(std::string_view, ModelSpec& s) {
    s.qk_norm = true;
}

json qwen3_config_json(const ModelSpec& s) {
    json j = llama_like_config_json(s, qwen3_config);
    j["architectures"] = {"Qwen3ForCausalLM"};
    j["attention_bias"] = s.attention_bias;
    j["head_dim"] = s.head_dim;
    j["max_window_layers"] = s.n_layer;
    j["sliding_window"] = nullptr;
    j["use_sliding_window"] = false;
    return j;
}

constexpr SynthRow qwen3_presets[] = {
    SynthRow{"qwen3-0.6b", "Qwen/Qwen3-0.6B", 1024, 28, 16, 8, 128, 3072, 151936, 151643, 40960,
             1e6, 1e-6, true, 0},
    SynthRow{"qwen3-1.7b", "Qwen/Qwen3-1.7B", 2048, 28, 16, 8, 128, 6144, 151936, 151643, 40960,
             1e6, 1e-6, true, 0},
    SynthRow{"qwen3-4b", "Qwen/Qwen3-4B", 2560, 36, 32, 8, 128, 9728, 151936, 151643, 40960, 1e6,
             1e-6, true, 0},
    SynthRow{"qwen3-8b", "Qwen/Qwen3-8B", 4096, 36, 32, 8, 128, 12288, 151936, 151643, 40960, 1e6,
             1e-6, false, 0},
    SynthRow{"tiny-qwen3", "tiny test model, Qwen3 layout", 64, 2, 4, 2, 16, 128, 640, 608, 1024,
             1e6, 1e-6, true, 0},
};

void qwen3_check_synth(std::string_view preset, const ModelSpec& s) {
    check_synth_attention(preset, s, {.qk_norm = true});
}

constexpr std::string_view model_types[] = {"qwen3"};
constexpr std::string_view hf_classes[] = {"Qwen3ForCausalLM"};

}  // namespace

// Qwen2.5's tokenizer and turns with Qwen3's tool-response and thinking
// tokens, and its sampling settings.
const SynthTokenizer& qwen3_synth_tokenizer() {
    static const SynthTokenizer tokenizer = [] {
        SynthTokenizer t = qwen2_synth_tokenizer();
        for (const char* token : {"<tool_response>", "</tool_response>", "<think>", "</think>"})
            t.specials.push_back({token, false});
        t.temperature = 0.6;
        t.top_p = 0.95;
        t.repetition_penalty = 1.0;
        return t;
    }();
    return tokenizer;
}

const ModelFamily qwen3_family = {
    .arch = Arch::qwen3,
    .name = "qwen3",
    .model_types = model_types,
    .hf_classes = hf_classes,
    .gguf_arch = "qwen3",
    .parse_config = parse_qwen3,
    .gguf_tensor_name = llama_gguf_tensor_name,
    .expected_tensors = llama_tensors,
    .synth_rows = qwen3_presets,
    .synth_fields = qwen3_synth_fields,
    .check_synth = qwen3_check_synth,
    .config_json = qwen3_config_json,
    .synth_tokenizer = qwen3_synth_tokenizer,
    .build_function = build_llama_function,
};

}  // namespace anelm
