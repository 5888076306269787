// The shapes of the models `anelm synth` imitates, from their config.json files.
#include <fmt/ranges.h>

#include <array>

#include "base/error.h"
#include "models/model_family.h"
#include "synth/family.h"
#include "synth/synth.h"

namespace anelm {

namespace {

struct Row {
    const char* name;
    const char* model;
    Arch arch;
    int64_t n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff;
    int64_t n_vocab, n_vocab_bpe, n_ctx_train;
    double rope_theta, rms_norm_eps;
    bool tie_word_embeddings;
    double llama3_rope_factor;  // 0: no rope_scaling
};

// Qwen2.5 and Llama rows are the Instruct releases (their eos ids and chat templates).
constexpr std::array rows = {
    Row{"qwen3-0.6b", "Qwen/Qwen3-0.6B", Arch::qwen3, 1024, 28, 16, 8, 128, 3072, 151936, 151643,
        40960, 1e6, 1e-6, true, 0},
    Row{"qwen3-1.7b", "Qwen/Qwen3-1.7B", Arch::qwen3, 2048, 28, 16, 8, 128, 6144, 151936, 151643,
        40960, 1e6, 1e-6, true, 0},
    Row{"qwen3-4b", "Qwen/Qwen3-4B", Arch::qwen3, 2560, 36, 32, 8, 128, 9728, 151936, 151643, 40960,
        1e6, 1e-6, true, 0},
    Row{"qwen3-8b", "Qwen/Qwen3-8B", Arch::qwen3, 4096, 36, 32, 8, 128, 12288, 151936, 151643,
        40960, 1e6, 1e-6, false, 0},
    Row{"qwen2.5-0.5b", "Qwen/Qwen2.5-0.5B-Instruct", Arch::qwen2, 896, 24, 14, 2, 64, 4864, 151936,
        151643, 32768, 1e6, 1e-6, true, 0},
    Row{"qwen2.5-1.5b", "Qwen/Qwen2.5-1.5B-Instruct", Arch::qwen2, 1536, 28, 12, 2, 128, 8960,
        151936, 151643, 32768, 1e6, 1e-6, true, 0},
    Row{"llama-3.2-1b", "meta-llama/Llama-3.2-1B-Instruct", Arch::llama, 2048, 16, 32, 8, 64, 8192,
        128256, 128000, 131072, 5e5, 1e-5, true, 32},
    Row{"llama-3.2-3b", "meta-llama/Llama-3.2-3B-Instruct", Arch::llama, 3072, 28, 24, 8, 128, 8192,
        128256, 128000, 131072, 5e5, 1e-5, true, 32},
    Row{"llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct", Arch::llama, 4096, 32, 32, 8, 128,
        14336, 128256, 128000, 131072, 5e5, 1e-5, false, 8},
    // Tiny models for tests: the same layouts in a few hundred kilobytes. The Llama one
    // keeps an untied lm_head and llama3 rope scaling so those paths are exercised; the
    // Qwen2.5 one has a vocabulary of 648, which 16 LM head pieces do not divide.
    Row{"tiny-llama", "tiny test model, Llama 3 layout", Arch::llama, 64, 2, 4, 2, 16, 128, 640,
        576, 2048, 5e5, 1e-5, false, 32},
    Row{"tiny-qwen2", "tiny test model, Qwen2.5 layout", Arch::qwen2, 64, 2, 4, 2, 16, 128, 648,
        608, 1024, 1e6, 1e-6, true, 0},
    Row{"tiny-qwen3", "tiny test model, Qwen3 layout", Arch::qwen3, 64, 2, 4, 2, 16, 128, 640, 608,
        1024, 1e6, 1e-6, true, 0},
    Row{"gemma-3-270m", "google/gemma-3-270m", Arch::gemma3, 640, 18, 4, 1, 256, 2048, 262144,
        256000, 32768, 1e6, 1e-6, true, 0},
    Row{"gemma-3-1b", "google/gemma-3-1b-it", Arch::gemma3, 1152, 26, 4, 1, 256, 6912, 262144,
        256000, 32768, 1e6, 1e-6, true, 0},
    Row{"gemma-3-4b", "google/gemma-3-4b-it (its text_config)", Arch::gemma3, 2560, 34, 8, 4, 256,
        10240, 262208, 256000, 131072, 1e6, 1e-6, true, 0},
    Row{"tiny-gemma3", "tiny test model, Gemma 3 layout", Arch::gemma3, 64, 2, 4, 2, 16, 128, 640,
        608, 1024, 1e6, 1e-6, true, 0},
    Row{"lfm2.5-350m", "LiquidAI/LFM2.5-350M", Arch::lfm2, 1024, 16, 16, 8, 64, 4608, 65536, 65000,
        128000, 1e6, 1e-5, true, 0},
    Row{"lfm2-1.2b", "LiquidAI/LFM2-1.2B", Arch::lfm2, 2048, 16, 32, 8, 64, 8192, 65536, 65000,
        128000, 1e6, 1e-5, true, 0},
    Row{"tiny-lfm2", "tiny test model, LFM2 layout", Arch::lfm2, 64, 4, 4, 2, 16, 128, 640, 608,
        1024, 1e6, 1e-5, true, 0},
    Row{"qwen3.5-0.8b", "Qwen/Qwen3.5-0.8B (its text model)", Arch::qwen3_5, 1024, 24, 8, 2, 256,
        3584, 248320, 248044, 262144, 1e7, 1e-6, true, 0},
    Row{"qwen3.5-2b", "Qwen/Qwen3.5-2B (its text model)", Arch::qwen3_5, 2048, 24, 8, 2, 256, 6144,
        248320, 248044, 262144, 1e7, 1e-6, true, 0},
    Row{"tiny-qwen3.5", "tiny test model, Qwen3.5 layout", Arch::qwen3_5, 64, 4, 4, 2, 16, 128, 640,
        608, 1024, 1e7, 1e-6, true, 0},
    Row{"gemma-4-e2b", "google/gemma-4-E2B-it (its text model)", Arch::gemma4, 1536, 35, 8, 1, 256,
        6144, 262144, 256000, 131072, 1e6, 1e-6, true, 0},
    Row{"gemma-4-e4b", "google/gemma-4-E4B-it (its text model)", Arch::gemma4, 2560, 42, 8, 2, 256,
        10240, 262144, 256000, 131072, 1e6, 1e-6, true, 0},
    Row{"tiny-gemma4", "tiny test model, Gemma 4 layout", Arch::gemma4, 64, 6, 4, 2, 16, 128, 640,
        608, 1024, 1e6, 1e-6, true, 0},
};

SynthPreset make_preset(const Row& r) {
    SynthPreset p;
    p.name = r.name;
    p.model = r.model;
    p.n_vocab_bpe = r.n_vocab_bpe;
    ModelSpec& s = p.spec;
    s.arch = r.arch;
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
    if (const ModelFamily* family = model_family(r.arch); family && family->synth_fields)
        family->synth_fields(r.name, s);
    s.torch_dtype = "bfloat16";

    const auto& family = synth::family_of(r.arch);
    s.bos_token_id = synth::special_token_id(family, r.n_vocab_bpe, family.config_bos);
    for (const auto& eos : family.config_eos)
        s.eos_token_ids.push_back(synth::special_token_id(family, r.n_vocab_bpe, eos));
    return p;
}

}  // namespace

std::vector<std::string> synth_presets() {
    std::vector<std::string> names;
    for (const auto& r : rows) names.emplace_back(r.name);
    return names;
}

SynthPreset synth_preset(std::string_view name) {
    for (const auto& r : rows)
        if (name == r.name) return make_preset(r);
    fail("synth: unknown preset '{}' (known: {})", name, fmt::join(synth_presets(), ", "));
}

}  // namespace anelm
