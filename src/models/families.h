// One builder per model family; build_program picks by ModelSpec::arch.
#pragma once

#include <fmt/format.h>

#include <string>

#include "models/models.h"

namespace anelm {

// A layer's tensor by its Hugging Face suffix: model.layers.3.mlp.up_proj.weight.
inline std::string layer_weight(int64_t il, const char* suffix) {
    return fmt::format("model.layers.{}.{}", il, suffix);
}

// A layer's value by llama.cpp's name for it: blk.3.ffn_up.
inline std::string value_name(int64_t il, const char* suffix) {
    return fmt::format("blk.{}.{}", il, suffix);
}

// Parts every family's function shares.
namespace ir {
class Builder;
}
// A new function of the program, named and sized as `shape` says.
ir::Function& add_function(ir::Program& program, const FunctionShape& shape);
// The logits: the last token's row (unless the shape asks for every row's),
// the final norm `norm` and the LM head (the embedding table when tied).
ir::ValueId lm_head(ir::Builder& b, const ModelSpec& spec, const FunctionShape& shape,
                    ir::ValueId x, const char* norm, float gain_offset = 0,
                    std::string name = "logits");

void build_llama_function(const ModelSpec& spec, const WeightStore& weights,
                          const FunctionShape& shape, ir::Program& program);
void build_gemma3_function(const ModelSpec& spec, const WeightStore& weights,
                           const FunctionShape& shape, ir::Program& program);
void build_lfm2_function(const ModelSpec& spec, const WeightStore& weights,
                         const FunctionShape& shape, ir::Program& program);
void build_qwen3_5_function(const ModelSpec& spec, const WeightStore& weights,
                            const FunctionShape& shape, ir::Program& program);

}  // namespace anelm
