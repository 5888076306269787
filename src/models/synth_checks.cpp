#include "models/synth_checks.h"

#include "base/error.h"
#include "models/models.h"

namespace anelm {

void check_synth_attention(std::string_view preset, const ModelSpec& s, SynthAttention attention) {
    const bool bias_ok = attention.qkv_bias ? s.attention_bias && !s.attention_out_bias
                                            : s.attention_bias == s.attention_out_bias;
    if (!bias_ok)
        fail("synth: preset {}: {} has no config for these attention biases", preset,
             arch_name(s.arch));
    if (s.qk_norm != attention.qk_norm)
        fail("synth: preset {}: {} {} q/k norms", preset, arch_name(s.arch),
             attention.qk_norm ? "always has" : "has no");
    if (attention.sliding_layers && static_cast<int64_t>(s.sliding_layers.size()) != s.n_layer)
        fail("synth: preset {}: {} layer types for {} layers", preset, s.sliding_layers.size(),
             s.n_layer);
}

}  // namespace anelm
