// config.json of the families laid out like Llama (Llama, Qwen2, Qwen3, Gemma 3):
// one reader and one writer over transformers' LlamaConfig names, told what each family
// does differently.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "io/config_fields.h"
#include "io/model_spec.h"

namespace anelm {

struct LlamaLikeConfig {
    // The activation's field and the one value anelm reads.
    const char* act_field = "hidden_act";
    const char* act_name = "silu";
    // use_sliding_window may be set, and true is refused (Qwen's classes).
    bool refuses_sliding_window = false;
    // A missing num_key_value_heads means n_head (LlamaConfig); else it is required.
    bool kv_heads_default = false;
    // head_dim is required rather than derived from hidden_size.
    bool head_dim_required = false;
    // q, k and v always carry a bias and o never; there is no field for it (Qwen2).
    bool qkv_bias = false;
    bool qk_norm = false;
    // The family's own fields, read after the common ones; a family that has
    // them reads its rotation there too.
    void (*own_fields)(const ConfigFields& f, const std::string& path, ModelSpec& spec) = nullptr;
};

// The model's fields `f`; `top` is the whole config.json, which may name
// torch_dtype when `f` is its text_config. Defaults follow transformers'
// config classes where they derive from other fields; fields whose default is
// an arbitrary constant are required.
ModelSpec parse_llama_like_config(const ConfigFields& top, const ConfigFields& f,
                                  const std::string& path, ModelSpec spec,
                                  const LlamaLikeConfig& config);

// The fields these families' config.json files share, as transformers writes
// them for a synth spec; the family adds its own.
nlohmann::json llama_like_config_json(const ModelSpec& s, const LlamaLikeConfig& config);

}  // namespace anelm
