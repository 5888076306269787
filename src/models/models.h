// Builds the program for a model. The only door to architecture-specific code.
#pragma once

#include <string>
#include <vector>

#include "io/model_spec.h"
#include "io/weight_store.h"
#include "ir/program.h"

namespace anelm {

struct FunctionShape {
    std::string name;      // "prefill", "decode"
    int64_t n_tokens = 1;  // the most tokens one call takes
    bool all_logits = false;  // logits for every token, not only the last
};

struct ProgramOptions {
    int64_t n_ctx = 0;  // KV cache length; 0 means the model's trained context
    std::vector<FunctionShape> functions{{"prefill", 512, false}, {"decode", 1, false}};
};

// The name of an arch's family: llama, qwen2, qwen3, gemma3, lfm2, qwen3_5, gemma4.
const char* arch_name(Arch arch);

ir::Program build_program(const ModelSpec& spec, const WeightStore& weights,
                          const ProgramOptions& options);

// Rotary inverse frequencies (head_dim / 2 values), with rope_scaling applied
// exactly as Hugging Face computes them.
std::vector<float> rope_inv_freq(const ModelSpec& spec);

}  // namespace anelm
