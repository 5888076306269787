// The presets `anelm synth` writes: each family's rows of the shapes it imitates
// (models/<family>.cpp), what the family adds to them, and its special token ids.
#include <fmt/ranges.h>

#include "base/error.h"
#include "models/model_family.h"
#include "synth/special_tokens.h"
#include "synth/synth.h"

namespace anelm {

namespace {

SynthPreset make_preset(const ModelFamily& family, const SynthRow& r) {
    SynthPreset p;
    p.name = r.name;
    p.model = r.model;
    p.n_vocab_bpe = r.n_vocab_bpe;
    ModelSpec& s = p.spec;
    s.arch = family.arch;
    s.source = r.name;
    s.n_embd = r.n_embd;
    s.n_layer = r.n_layer;
    s.n_head = r.n_head;
    s.n_head_kv = r.n_head_kv;
    s.head_dim = r.head_dim;
    s.n_ff = r.n_ff;
    s.n_vocab = r.n_vocab;
    s.n_ctx_train = r.n_ctx_train;
    s.rope_theta = r.rope_theta;
    if (r.llama3_rope_factor > 0) {
        s.rope_scaling.type = RopeScaling::Type::llama3;
        s.rope_scaling.factor = r.llama3_rope_factor;
        s.rope_scaling.low_freq_factor = 1.0;
        s.rope_scaling.high_freq_factor = 4.0;
        s.rope_scaling.original_max_position_embeddings = 8192;
    }
    s.rms_norm_eps = r.rms_norm_eps;
    s.tie_word_embeddings = r.tie_word_embeddings;
    if (family.synth_fields) family.synth_fields(r.name, s);
    s.torch_dtype = "bfloat16";

    const SynthTokenizer& tokens = family.synth_tokenizer();
    s.bos_token_id = synth::special_token_id(tokens, r.n_vocab_bpe, tokens.config_bos);
    for (const auto& eos : tokens.config_eos)
        s.eos_token_ids.push_back(synth::special_token_id(tokens, r.n_vocab_bpe, eos));
    return p;
}

}  // namespace

std::vector<std::string> synth_presets() {
    std::vector<std::string> names;
    for (const ModelFamily* family : model_families())
        for (const SynthRow& r : family->synth_rows) names.emplace_back(r.name);
    return names;
}

SynthPreset synth_preset(std::string_view name) {
    for (const ModelFamily* family : model_families())
        for (const SynthRow& r : family->synth_rows)
            if (name == r.name) return make_preset(*family, r);
    fail("synth: unknown preset '{}' (known: {})", name, fmt::join(synth_presets(), ", "));
}

}  // namespace anelm
