#include "models/llama_like_config.h"

#include "models/models.h"

namespace anelm {

using nlohmann::json;

ModelSpec parse_llama_like_config(const ConfigFields& top, const ConfigFields& f,
                                  const std::string& path, ModelSpec spec,
                                  const LlamaLikeConfig& config) {
    if (auto act = f.string(config.act_field); act && *act != config.act_name)
        f.fail_field(config.act_field, "unsupported activation \"{}\" (supported: {})", *act,
                     config.act_name);
    if (f.boolean("mlp_bias", false)) f.fail_field("mlp_bias", "true is not supported");
    if (config.refuses_sliding_window && f.boolean("use_sliding_window", false))
        f.fail_field("use_sliding_window", "true is not supported");

    spec.n_embd = f.required_integer("hidden_size", 1, max_dim);
    spec.n_layer = f.required_integer("num_hidden_layers", 1, max_layers);
    spec.n_head = f.required_integer("num_attention_heads", 1, max_dim);
    // transformers derives n_head_kv from n_head when it is null, and for Llama
    // also when absent; Qwen's classes default to a fixed 32 instead, which no
    // real checkpoint relies on, so there the field is required.
    if (config.kv_heads_default || f.has("num_key_value_heads"))
        spec.n_head_kv = f.integer("num_key_value_heads", 1, max_dim).value_or(spec.n_head);
    else
        f.fail_field("num_key_value_heads", "missing");
    if (auto head_dim = f.integer("head_dim", 1, max_dim)) {
        spec.head_dim = *head_dim;
    } else if (config.head_dim_required) {
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

    if (!config.own_fields) parse_rope(f, path, spec);
    spec.rope_style = RopeStyle::rotate_half;
    spec.rms_norm_eps = f.positive("rms_norm_eps", 1.0).value_or(1e-6);
    spec.tie_word_embeddings = f.boolean("tie_word_embeddings", false);

    // Otherwise attention_bias puts a bias on all four projections.
    if (config.qkv_bias) {
        spec.attention_bias = true;
    } else {
        spec.attention_bias = f.boolean("attention_bias", false);
        spec.attention_out_bias = spec.attention_bias;
    }
    spec.qk_norm = config.qk_norm;
    if (config.own_fields) config.own_fields(f, path, spec);
    // transformers 5 renamed torch_dtype to dtype; a multimodal config may name it at the top.
    spec.torch_dtype =
        f.string("torch_dtype")
            .value_or(f.string("dtype").value_or(top.string("torch_dtype").value_or("")));

    spec.bos_token_id = bos_token_id(f, spec.n_vocab).value_or(-1);
    spec.eos_token_ids = f.token_ids("eos_token_id", spec.n_vocab);
    return spec;
}

namespace {

json rope_scaling_json(const RopeScaling& r) {
    switch (r.type) {
        case RopeScaling::Type::none:
            return nullptr;
        case RopeScaling::Type::linear:
            return {{"rope_type", "linear"}, {"factor", r.factor}};
        case RopeScaling::Type::llama3:
            return {{"rope_type", "llama3"},
                    {"factor", r.factor},
                    {"low_freq_factor", r.low_freq_factor},
                    {"high_freq_factor", r.high_freq_factor},
                    {"original_max_position_embeddings", r.original_max_position_embeddings}};
    }
    return nullptr;
}

}  // namespace

json llama_like_config_json(const ModelSpec& s, const LlamaLikeConfig& config) {
    return {
        {"attention_dropout", 0.0},
        {"bos_token_id", s.bos_token_id},
        {config.act_field, config.act_name},
        {"hidden_size", s.n_embd},
        {"initializer_range", 0.02},
        {"intermediate_size", s.n_ff},
        {"max_position_embeddings", s.n_ctx_train},
        {"model_type", arch_name(s.arch)},
        {"num_attention_heads", s.n_head},
        {"num_hidden_layers", s.n_layer},
        {"num_key_value_heads", s.n_head_kv},
        {"rms_norm_eps", s.rms_norm_eps},
        {"rope_scaling", rope_scaling_json(s.rope_scaling)},
        {"rope_theta", s.rope_theta},
        {"tie_word_embeddings", s.tie_word_embeddings},
        {"transformers_version", "4.51.0"},
        {"use_cache", true},
        {"vocab_size", s.n_vocab},
    };
}

}  // namespace anelm
