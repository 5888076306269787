// Everything anelm knows about one model family, in the family's own file
// (models/<family>.cpp): its name, how its config.json and GGUF metadata read,
// its tensor names, the tensors it expects, its synth presets (their rows,
// fields, config.json and tokenizer), and its graph. model_families() lists
// them; the readers, synth and build_program ask it by model_type, GGUF
// architecture or Arch.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/config_fields.h"
#include "io/gguf.h"
#include "io/gguf_keys.h"
#include "io/model_spec.h"
#include "io/weight_store.h"
#include "ir/program.h"
#include "models/expected_tensors.h"
#include "models/models.h"
#include "models/synth_tokenizer.h"

namespace anelm {

// A model whose shapes a synth preset copies, from its config.json.
struct SynthRow {
    const char* name;   // the preset's, as given to anelm synth
    const char* model;  // the model it imitates ("Qwen/Qwen3-0.6B")
    int64_t n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff;
    int64_t n_vocab, n_vocab_bpe, n_ctx_train;
    double rope_theta, rms_norm_eps;
    bool tie_word_embeddings;
    double llama3_rope_factor;  // 0: no rope_scaling
};

struct ModelFamily {
    Arch arch;
    const char* name;  // in messages, reports and anelm info (arch_name)
    std::span<const std::string_view> model_types;  // config.json's model_type
    std::span<const std::string_view> hf_classes;   // entries of config.json's architectures
    std::string_view gguf_arch = {};                // GGUF general.architecture; empty: none

    // config.json's fields; `spec` holds the source and arch.
    ModelSpec (*parse_config)(const ConfigFields& top, const std::string& path,
                              ModelSpec spec) = nullptr;
    // The KV heads when the family's GGUF lists a count per layer (read with
    // the layer kinds it implies), else null for the one attention.head_count_kv.
    int64_t (*gguf_kv_heads)(const GgufFile& gguf, const GgufKeys& keys, ModelSpec& spec) = nullptr;
    // The family's own GGUF metadata and tensors, read after the common keys.
    void (*read_gguf)(const GgufFile& gguf, const GgufKeys& keys, ModelSpec& spec) = nullptr;
    // GGUF's rope.dimension_count may rotate part of a head.
    bool partial_rotation = false;
    // How its GGUF orders each head's q and k rows: llama.cpp's converter
    // interleaves them for Llama only (its NORM rope); the others keep
    // rotate-half order (NEOX rope).
    RopeStyle gguf_rope = RopeStyle::rotate_half;
    // The Hugging Face name of a GGUF tensor the common names leave out, or empty.
    std::string (*gguf_tensor_name)(std::string_view name) = nullptr;
    // Whether the family stores this norm's gain (by its Hugging Face name) as
    // an offset from one, which GGUF holds with the one added.
    bool (*offset_norm)(std::string_view name) = nullptr;
    std::vector<ExpectedTensor> (*expected_tensors)(const ModelSpec& spec) = nullptr;

    // Its synth presets, real models first.
    std::span<const SynthRow> synth_rows = {};
    // What the family adds to the synth preset `preset`'s spec.
    void (*synth_fields)(std::string_view preset, ModelSpec& spec) = nullptr;
    // Throws when the family's config.json cannot say what a synth spec holds
    // (models/synth_checks.h has the checks families share).
    void (*check_synth)(std::string_view preset, const ModelSpec& spec) = nullptr;
    // config.json for a synth spec but for torch_dtype and eos_token_id, which
    // the writer adds.
    nlohmann::json (*config_json)(const ModelSpec& spec) = nullptr;
    // The config names the tokenizer's <pad> id, which the writer adds.
    bool config_pad = false;
    // The tokenizer and chat template its synth presets are written with.
    const SynthTokenizer& (*synth_tokenizer)() = nullptr;

    // The KV caches when the family's are not one state for every attention
    // layer, added to the program.
    void (*add_caches)(const ModelSpec& spec, int64_t n_ctx, ir::Program& program) = nullptr;

    void (*build_function)(const ModelSpec& spec, const WeightStore& weights,
                           const FunctionShape& shape, ir::Program& program) = nullptr;
};

// Every family anelm reads (models/model_families.cpp).
std::span<const ModelFamily* const> model_families();
// The family of an Arch, of a config.json model_type or architectures entry,
// or of a GGUF general.architecture; null when none has it.
const ModelFamily* model_family(Arch arch);
const ModelFamily* family_for_model_type(std::string_view model_type);
const ModelFamily* family_for_class(std::string_view hf_class);
const ModelFamily* family_for_gguf(std::string_view gguf_arch);

// A GGUF layer tensor's name, blk.N.REST with REST split at its last dot
// into PART and .SUFFIX (empty when REST has none).
struct GgufLayerName {
    int64_t layer = 0;
    std::string_view number;  // N as written
    std::string_view rest, part, suffix;
};
std::optional<GgufLayerName> split_gguf_layer_name(std::string_view name);
// llama.cpp's names of a layer's parts and their Hugging Face names.
using GgufNames = std::span<const std::pair<std::string_view, std::string_view>>;
// model.layers.N.<Hugging Face part>.SUFFIX for the table's entry for PART, or empty.
std::string hf_layer_name(const GgufLayerName& name, GgufNames table);
// The Hugging Face name of a Llama-like decoder layer's GGUF tensor (attention
// with its q/k norms, gated MLP) or of one of `norms`, the family's names for
// the norms around them; empty when neither names it.
std::string decoder_gguf_tensor_name(std::string_view name, GgufNames norms);

extern const ModelFamily llama_family;
extern const ModelFamily qwen2_family;
extern const ModelFamily qwen3_family;
extern const ModelFamily gemma3_family;
extern const ModelFamily lfm2_family;
extern const ModelFamily qwen3_5_family;
extern const ModelFamily gemma4_family;

}  // namespace anelm
