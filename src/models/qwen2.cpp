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

// Qwen2's split pattern: one digit a piece.
constexpr std::string_view qwen_split =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

// ChatML, without the tool and reasoning branches of the released templates.
constexpr std::string_view chatml_template =
    R"({% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %})";

constexpr std::string_view model_types[] = {"qwen2"};
constexpr std::string_view hf_classes[] = {"Qwen2ForCausalLM"};

}  // namespace

const SynthTokenizer& qwen2_synth_tokenizer() {
    static const SynthTokenizer tokenizer = [] {
        SynthTokenizer t;
        t.specials = {
            {"<|endoftext|>"},         {"<|im_start|>"},          {"<|im_end|>"},
            {"<|object_ref_start|>"},  {"<|object_ref_end|>"},    {"<|box_start|>"},
            {"<|box_end|>"},           {"<|quad_start|>"},        {"<|quad_end|>"},
            {"<|vision_start|>"},      {"<|vision_end|>"},        {"<|vision_pad|>"},
            {"<|image_pad|>"},         {"<|video_pad|>"},         {"<tool_call>", false},
            {"</tool_call>", false},   {"<|fim_prefix|>", false}, {"<|fim_middle|>", false},
            {"<|fim_suffix|>", false}, {"<|fim_pad|>", false},    {"<|repo_name|>", false},
            {"<|file_sep|>", false},
        };
        t.split_regex = qwen_split;
        t.nfc = true;
        t.config_bos = "<|endoftext|>";
        t.eos = "<|im_end|>";
        t.pad = "<|endoftext|>";
        t.config_eos = {"<|im_end|>"};
        t.generation_eos = {"<|im_end|>", "<|endoftext|>"};
        t.chat_template = chatml_template;
        t.tokenizer_class = "Qwen2Tokenizer";
        t.temperature = 0.7;
        t.top_p = 0.8;
        t.top_k = 20;
        t.repetition_penalty = 1.05;
        return t;
    }();
    return tokenizer;
}

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
    .synth_tokenizer = qwen2_synth_tokenizer,
    .build_function = build_llama_function,
};

}  // namespace anelm
