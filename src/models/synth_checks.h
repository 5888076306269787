// The check every family's check_synth makes of a synth spec's attention: it
// throws when the family's config.json could not say what the spec holds.
#pragma once

#include <string_view>

#include "io/model_spec.h"

namespace anelm {

// What a family's config.json says of attention: whether each head of q and k
// is normed; whether q, k and v always carry a bias and o never (Qwen2, which
// has no field for it; the others' attention_bias covers all four or none);
// whether each layer is of a kind, sliding or full (layer_types).
struct SynthAttention {
    bool qk_norm = false;
    bool qkv_bias = false;
    bool sliding_layers = false;
};
void check_synth_attention(std::string_view preset, const ModelSpec& s, SynthAttention attention);

}  // namespace anelm
