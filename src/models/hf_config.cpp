#include "models/hf_config.h"

#include <algorithm>
#include <optional>

#include "base/error.h"
#include "io/config_fields.h"
#include "models/model_family.h"

namespace anelm {

namespace {

using nlohmann::json;

Arch parse_arch(const ConfigFields& f) {
    constexpr std::pair<std::string_view, Arch> types[] = {
        {"llama", Arch::llama},        {"qwen2", Arch::qwen2},   {"qwen3", Arch::qwen3},
        {"gemma3_text", Arch::gemma3}, {"gemma3", Arch::gemma3},
    };
    constexpr std::pair<std::string_view, Arch> classes[] = {
        {"LlamaForCausalLM", Arch::llama},
        {"Qwen2ForCausalLM", Arch::qwen2},
        {"Qwen3ForCausalLM", Arch::qwen3},
        {"Gemma3ForCausalLM", Arch::gemma3},
        {"Gemma3ForConditionalGeneration", Arch::gemma3},
    };
    if (auto type = f.string("model_type")) {
        if (const ModelFamily* family = family_for_model_type(*type)) return family->arch;
        for (const auto& [name, arch] : types)
            if (name == *type) return arch;
        f.fail_field("model_type",
                     "unsupported model type \"{}\" (supported: llama, qwen2, qwen3, gemma3_text, "
                     "gemma3, lfm2, qwen3_5, qwen3_5_text, gemma4, gemma4_text)",
                     *type);
    }
    const json* list = f.find("architectures");
    if (!list) f.fail_field("model_type", "missing, and no architectures field to fall back on");
    if (!list->is_array())
        f.fail_field("architectures", "expected a list of class names, got {}",
                     json_type_words(*list));
    for (const json& entry : *list) {
        if (!entry.is_string()) continue;
        const std::string& name = entry.get_ref<const std::string&>();
        if (const ModelFamily* family = family_for_class(name)) return family->arch;
        for (const auto& [class_name, arch] : classes)
            if (name == class_name) return arch;
    }
    f.fail_field("architectures",
                 "none of {} is supported (LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, "
                 "Gemma3ForCausalLM, Gemma3ForConditionalGeneration, Lfm2ForCausalLM, "
                 "Qwen3_5ForCausalLM, Qwen3_5ForConditionalGeneration, Gemma4ForCausalLM, "
                 "Gemma4ForConditionalGeneration)",
                 list->dump());
}

void check_features(const ConfigFields& f, Arch arch) {
    // Gemma 3 names its activation hidden_activation, a GELU by default.
    const bool gemma = arch == Arch::gemma3;
    const char* act_field = gemma ? "hidden_activation" : "hidden_act";
    const char* act_name = gemma ? "gelu_pytorch_tanh" : "silu";
    if (auto act = f.string(act_field); act && *act != act_name)
        f.fail_field(act_field, "unsupported activation \"{}\" (supported: {})", *act, act_name);
    if (f.boolean("mlp_bias", false)) f.fail_field("mlp_bias", "true is not supported");
    if (arch != Arch::llama && !gemma && f.boolean("use_sliding_window", false))
        f.fail_field("use_sliding_window", "true is not supported");
}

// Which layers use sliding-window attention: layer_types when given, else every
// layer but each sliding_window_pattern-th (transformers' Gemma 3 rule).
std::vector<bool> gemma3_sliding_layers(const ConfigFields& f, int64_t n_layer) {
    if (auto kinds = layer_types(f, n_layer, "sliding_attention")) return *kinds;
    return all_but_every(n_layer, f.integer("sliding_window_pattern", 1, max_layers).value_or(6));
}

// Gemma3TextConfig's defaults. A multimodal config's text_config names only the
// fields that differ from them (gemma-3-4b's has no head counts or vocab_size).
json gemma3_text_defaults() {
    return {{"hidden_size", 2304},      {"intermediate_size", 9216},
            {"num_hidden_layers", 26},  {"num_attention_heads", 8},
            {"num_key_value_heads", 4}, {"head_dim", 256},
            {"vocab_size", 262208},     {"max_position_embeddings", 131072},
            {"rms_norm_eps", 1e-6},     {"query_pre_attn_scalar", 256},
            {"sliding_window", 4096},   {"rope_local_base_freq", 10000.0},
            {"rope_theta", 1e6},        {"tie_word_embeddings", true}};
}

// Gemma 3's own fields (parse_hf_config has filled in Gemma3TextConfig's defaults).
// transformers 5 splits rope_parameters into full_attention and sliding_attention.
void parse_gemma3(const ConfigFields& f, const std::string& path, ModelSpec& spec) {
    spec.qk_norm = true;
    spec.query_pre_attn_scalar = f.positive("query_pre_attn_scalar", 1e9).value_or(256.0);
    spec.sliding_window = f.integer("sliding_window", 1, max_ctx).value_or(4096);
    spec.sliding_layers = gemma3_sliding_layers(f, spec.n_layer);
    spec.rope_local_base_freq = f.positive("rope_local_base_freq", 1e12).value_or(10000.0);
    spec.final_logit_softcapping = f.positive("final_logit_softcapping", 1e9).value_or(0.0);
    spec.attn_logit_softcapping = f.positive("attn_logit_softcapping", 1e9).value_or(0.0);
    spec.tie_word_embeddings = f.boolean("tie_word_embeddings", true);
    spec.rope_theta = f.positive("rope_theta", 1e12).value_or(spec.rope_theta);
    const json* params = f.find("rope_parameters");
    if (params && params->is_object() && params->contains("full_attention")) {
        const ConfigFields full((*params)["full_attention"], path,
                                "rope_parameters.full_attention.");
        spec.rope_theta = full.positive("rope_theta", 1e12).value_or(spec.rope_theta);
        spec.rope_scaling = parse_rope_scaling(full);
        if (params->contains("sliding_attention")) {
            const ConfigFields local((*params)["sliding_attention"], path,
                                     "rope_parameters.sliding_attention.");
            spec.rope_local_base_freq =
                local.positive("rope_theta", 1e12).value_or(spec.rope_local_base_freq);
        }
    } else {
        parse_rope(f, path, spec);
    }
}

}  // namespace

ModelSpec parse_hf_config(std::string_view text, const std::string& path) {
    const json config = parse_json(text, path);
    if (!config.is_object())
        fail("{}: expected a JSON object, got {}", path, json_type_words(config));
    const ConfigFields top(config, path);

    ModelSpec spec;
    spec.source = path;
    spec.arch = parse_arch(top);
    if (const ModelFamily* family = model_family(spec.arch); family && family->parse_config)
        return family->parse_config(top, path, std::move(spec));
    // A multimodal Gemma 3 keeps the language model's fields under text_config.
    const json* text_config = spec.arch == Arch::gemma3 ? top.find("text_config") : nullptr;
    if (text_config && !text_config->is_object())
        top.fail_field("text_config", "expected an object, got {}", json_type_words(*text_config));
    json gemma_fields;
    if (spec.arch == Arch::gemma3) {
        gemma_fields = gemma3_text_defaults();
        for (const auto& [key, value] : (text_config ? *text_config : config).items())
            gemma_fields[key] = value;
    }
    const ConfigFields f = spec.arch == Arch::gemma3
                               ? ConfigFields(gemma_fields, path, text_config ? "text_config." : "")
                               : top;
    check_features(f, spec.arch);
    const bool is_llama = spec.arch == Arch::llama;

    spec.n_embd = f.required_integer("hidden_size", 1, max_dim);
    spec.n_layer = f.required_integer("num_hidden_layers", 1, max_layers);
    spec.n_head = f.required_integer("num_attention_heads", 1, max_dim);
    // transformers derives n_head_kv from n_head when it is null, and for Llama
    // also when absent; Qwen's classes default to a fixed 32 instead, which no
    // real checkpoint relies on, so there the field is required.
    if (is_llama || f.has("num_key_value_heads"))
        spec.n_head_kv = f.integer("num_key_value_heads", 1, max_dim).value_or(spec.n_head);
    else
        f.fail_field("num_key_value_heads", "missing");
    if (auto head_dim = f.integer("head_dim", 1, max_dim)) {
        spec.head_dim = *head_dim;
    } else if (spec.arch == Arch::qwen3 || spec.arch == Arch::gemma3) {
        f.fail_field("head_dim", "missing ({} does not derive it from hidden_size)",
                     arch_name(spec.arch));
    } else {
        spec.head_dim = derived_head_dim(f, spec);
    }
    check_kv_heads(f, spec);
    if (spec.head_dim % 2 != 0)
        f.fail_field("head_dim", "{} is odd; rotary embedding rotates pairs", spec.head_dim);
    spec.n_ff = f.required_integer("intermediate_size", 1, max_dim * 16);
    spec.n_vocab = f.required_integer("vocab_size", 1, max_vocab);
    spec.n_ctx_train = f.required_integer("max_position_embeddings", 1, max_ctx);

    if (spec.arch != Arch::gemma3) parse_rope(f, path, spec);
    spec.rope_style = RopeStyle::rotate_half;
    spec.rms_norm_eps = f.positive("rms_norm_eps", 1.0).value_or(1e-6);
    spec.tie_word_embeddings = f.boolean("tie_word_embeddings", false);

    // Qwen2 always has q/k/v biases and none on o_proj; Llama and Qwen3 put a
    // bias on all four projections when attention_bias is set.
    if (spec.arch == Arch::qwen2) {
        spec.attention_bias = true;
    } else {
        spec.attention_bias = f.boolean("attention_bias", false);
        spec.attention_out_bias = spec.attention_bias;
    }
    spec.qk_norm = spec.arch == Arch::qwen3;
    if (spec.arch == Arch::gemma3) parse_gemma3(f, path, spec);
    // transformers 5 renamed torch_dtype to dtype; a multimodal config may name it at the top.
    spec.torch_dtype =
        f.string("torch_dtype")
            .value_or(f.string("dtype").value_or(top.string("torch_dtype").value_or("")));

    spec.bos_token_id = bos_token_id(f, spec.n_vocab).value_or(-1);
    spec.eos_token_ids = f.token_ids("eos_token_id", spec.n_vocab);
    if (text_config && !f.has("bos_token_id"))
        spec.bos_token_id = bos_token_id(top, spec.n_vocab).value_or(-1);
    if (text_config && !f.has("eos_token_id"))
        spec.eos_token_ids = top.token_ids("eos_token_id", spec.n_vocab);
    // Gemma3TextConfig's defaults: bos 2, eos 1.
    if (spec.arch == Arch::gemma3 && spec.bos_token_id < 0 && spec.n_vocab > 2)
        spec.bos_token_id = 2;
    if (spec.arch == Arch::gemma3 && spec.eos_token_ids.empty() && spec.n_vocab > 1)
        spec.eos_token_ids = {1};
    // LlamaConfig defaults to the SentencePiece ids 1 and 2; the Qwen classes have none.
    if (is_llama && !f.has("bos_token_id") && spec.n_vocab > 1) spec.bos_token_id = 1;
    if (is_llama && !f.has("eos_token_id") && spec.n_vocab > 2) spec.eos_token_ids = {2};
    return spec;
}

ModelSpec load_hf_config(const std::string& path) {
    return parse_hf_config(read_text_file(path), path);
}

void merge_generation_config(std::string_view text, const std::string& path, ModelSpec& spec) {
    const json config = parse_json(text, path);
    if (!config.is_object())
        fail("{}: expected a JSON object, got {}", path, json_type_words(config));
    const ConfigFields f(config, path);

    if (auto bos = bos_token_id(f, spec.n_vocab)) spec.bos_token_id = *bos;

    std::vector<int32_t> eos = f.token_ids("eos_token_id", spec.n_vocab);
    for (int32_t id : spec.eos_token_ids)
        if (std::find(eos.begin(), eos.end(), id) == eos.end()) eos.push_back(id);
    spec.eos_token_ids = std::move(eos);
}

void load_generation_config(const std::string& path, ModelSpec& spec) {
    merge_generation_config(read_text_file(path), path, spec);
}

}  // namespace anelm
