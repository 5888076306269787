// config.json and generation_config.json. transformers writes keys sorted, which
// nlohmann::json does too.
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "models/model_family.h"
#include "synth/family.h"
#include "synth/hf_json.h"

namespace anelm::synth {

namespace {

using nlohmann::json;

const char* torch_dtype(DType dtype) {
    switch (dtype) {
        case DType::f32:
            return "float32";
        case DType::f16:
            return "float16";
        case DType::bf16:
            return "bfloat16";
        default:
            break;
    }
    fail("synth: cannot write weights as {}", dtype_name(dtype));
}

// A single id as a number, several as a list, as the released configs have them.
json ids_json(const std::vector<int32_t>& ids) {
    if (ids.size() == 1) return ids[0];
    return ids;
}

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

// A number, or null for 0 (transformers' None).
json optional_number(double x) {
    return x > 0 ? json(x) : json(nullptr);
}

}  // namespace

void check_preset(const SynthPreset& preset) {
    const ModelSpec& s = preset.spec;
    const auto& family = family_of(s.arch);
    const std::string& name = preset.name;
    if (s.n_embd <= 0 || s.n_layer <= 0 || s.n_ff <= 0 || s.head_dim <= 0 || s.n_head <= 0)
        fail("synth: preset {}: sizes must be positive", name);
    if (s.n_head_kv <= 0 || s.n_head % s.n_head_kv != 0)
        fail("synth: preset {}: n_head {} is not a multiple of n_head_kv {}", name, s.n_head,
             s.n_head_kv);
    if (preset.n_vocab_bpe < 256)
        fail("synth: preset {}: n_vocab_bpe {} leaves no room for the 256 byte tokens", name,
             preset.n_vocab_bpe);
    const auto n_special = static_cast<int64_t>(family.specials.size());
    if (s.n_vocab < preset.n_vocab_bpe + n_special)
        fail("synth: preset {}: n_vocab {} leaves no room for {} special tokens after id {}", name,
             s.n_vocab, n_special, preset.n_vocab_bpe);
    // Qwen2's config has no field for biases: q/k/v always have one, o_proj never.
    // The other families' attention_bias covers all four projections.
    const bool bias_ok = s.arch == Arch::qwen2 ? s.attention_bias && !s.attention_out_bias
                                               : s.attention_bias == s.attention_out_bias;
    if (!bias_ok)
        fail("synth: preset {}: {} has no config for these attention biases", name,
             arch_name(s.arch));
    if (s.qk_norm != (s.arch == Arch::qwen3 || s.arch == Arch::gemma3 || s.arch == Arch::lfm2 ||
                      s.arch == Arch::qwen3_5 || s.arch == Arch::gemma4))
        fail("synth: preset {}: q/k norms come with qwen3, gemma3, lfm2, qwen3_5 and gemma4 only",
             name);
    if (const ModelFamily* arch_family = model_family(s.arch);
        arch_family && arch_family->check_synth)
        arch_family->check_synth(name, s);
    if ((s.arch == Arch::gemma3 || s.arch == Arch::gemma4) &&
        static_cast<int64_t>(s.sliding_layers.size()) != s.n_layer)
        fail("synth: preset {}: {} layer types for {} layers", name, s.sliding_layers.size(),
             s.n_layer);
    if (s.arch == Arch::qwen2 && s.rope_scaling.type != RopeScaling::Type::none)
        fail("synth: preset {}: qwen2 presets have no rope scaling", name);
}

std::string config_json(const SynthPreset& preset, DType dtype) {
    const ModelSpec& s = preset.spec;
    json j = {
        {"attention_dropout", 0.0},
        {"bos_token_id", s.bos_token_id},
        {"eos_token_id", ids_json(s.eos_token_ids)},
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
        {"torch_dtype", torch_dtype(dtype)},
        {"transformers_version", "4.51.0"},
        {"use_cache", true},
        {"vocab_size", s.n_vocab},
    };
    if (const ModelFamily* family = model_family(s.arch); family && family->config_json) {
        json own = family->config_json(s);
        own["eos_token_id"] = ids_json(s.eos_token_ids);
        own["torch_dtype"] = torch_dtype(dtype);
        if (family->config_pad)
            own["pad_token_id"] = special_token_id(family_of(s.arch), preset.n_vocab_bpe, "<pad>");
        return own.dump(2) + "\n";
    }
    if (s.arch != Arch::gemma3) j["hidden_act"] = "silu";
    switch (s.arch) {
        case Arch::llama:
            j["architectures"] = {"LlamaForCausalLM"};
            j["attention_bias"] = s.attention_bias;
            j["head_dim"] = s.head_dim;
            j["mlp_bias"] = false;
            j["pretraining_tp"] = 1;
            break;
        case Arch::qwen2:
            j["architectures"] = {"Qwen2ForCausalLM"};
            // transformers derives head_dim from the sizes when the field is absent.
            if (s.head_dim * s.n_head != s.n_embd) j["head_dim"] = s.head_dim;
            j["max_window_layers"] = s.n_layer;
            j["sliding_window"] = s.n_ctx_train;
            j["use_sliding_window"] = false;
            break;
        case Arch::qwen3:
            j["architectures"] = {"Qwen3ForCausalLM"};
            j["attention_bias"] = s.attention_bias;
            j["head_dim"] = s.head_dim;
            j["max_window_layers"] = s.n_layer;
            j["sliding_window"] = nullptr;
            j["use_sliding_window"] = false;
            break;
        case Arch::gemma3: {
            // Gemma3TextConfig's fields, as gemma-3-1b-it's config.json has them.
            j["architectures"] = {"Gemma3ForCausalLM"};
            j["model_type"] = "gemma3_text";
            j["attention_bias"] = s.attention_bias;
            j["attn_logit_softcapping"] = optional_number(s.attn_logit_softcapping);
            j["final_logit_softcapping"] = optional_number(s.final_logit_softcapping);
            j["head_dim"] = s.head_dim;
            j["hidden_activation"] = "gelu_pytorch_tanh";
            j["query_pre_attn_scalar"] = s.query_pre_attn_scalar;
            j["rope_local_base_freq"] = s.rope_local_base_freq;
            j["sliding_window"] = s.sliding_window;
            j["pad_token_id"] = special_token_id(family_of(s.arch), preset.n_vocab_bpe, "<pad>");
            json types = json::array();
            for (bool sliding : s.sliding_layers)
                types.push_back(sliding ? "sliding_attention" : "full_attention");
            j["layer_types"] = types;
            break;
        }
        case Arch::lfm2:
        case Arch::qwen3_5:
        case Arch::gemma4:
            break;
    }
    return j.dump(2) + "\n";
}

std::string generation_config_json(const SynthPreset& preset) {
    const auto& family = family_of(preset.spec.arch);
    std::vector<int32_t> eos;
    for (const auto& t : family.generation_eos)
        eos.push_back(special_token_id(family, preset.n_vocab_bpe, t));
    json j = {
        {"bos_token_id", preset.spec.bos_token_id},
        {"do_sample", true},
        {"eos_token_id", ids_json(eos)},
        {"temperature", family.temperature},
        {"top_p", family.top_p},
        {"transformers_version", "4.51.0"},
    };
    if (!family.pad.empty())
        j["pad_token_id"] = special_token_id(family, preset.n_vocab_bpe, family.pad);
    if (family.top_k > 0) j["top_k"] = family.top_k;
    if (family.repetition_penalty != 1.0) j["repetition_penalty"] = family.repetition_penalty;
    return j.dump(2) + "\n";
}

}  // namespace anelm::synth
