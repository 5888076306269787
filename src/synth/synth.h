// Random-weight Hugging Face folders with the exact shapes of known models, for
// tests and benchmarks that must not depend on downloaded checkpoints.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.h"
#include "io/model_spec.h"

namespace anelm {

struct SynthPreset {
    std::string name;         // as given to `anelm synth`
    std::string model;        // the model whose shapes it copies ("Qwen/Qwen3-0.6B")
    ModelSpec spec;           // n_vocab counts every id, padding included
    int64_t n_vocab_bpe = 0;  // ids below are byte-level BPE tokens; special tokens follow
};

struct SynthOptions {
    DType dtype = DType::bf16;
    uint64_t seed = 0;
    bool force = false;  // replace an existing folder anelm wrote (base/output_check.h)
    int n_threads = 0;   // 0: one per physical core; the output does not depend on it
};

// Names of the presets, family by family in the registry's order
// (models/model_families.cpp), each family's real models before its tiny one.
std::vector<std::string> synth_presets();

// A preset by name, to write as is or to change (layers, sizes) first.
// Throws Error listing the known names when there is none by that name.
SynthPreset synth_preset(std::string_view name);

// Writes config.json, model.safetensors, tokenizer.json, tokenizer_config.json,
// generation_config.json and the list of them (.anelm-output) into `dir`. The
// folder is built under a temporary name beside `dir` and renamed when
// complete; an existing `dir` is an error unless options.force and it is
// empty or anelm's own output.
void synth_write(const SynthPreset& preset, const std::string& dir,
                 const SynthOptions& options = {});
void synth_write(const std::string& preset, const std::string& dir, DType dtype = DType::bf16,
                 uint64_t seed = 0);

// Number of weights the preset's safetensors file holds.
int64_t synth_param_count(const SynthPreset& preset);

}  // namespace anelm
