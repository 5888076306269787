// One builder per model family; build_program picks by ModelSpec::arch.
#pragma once

#include "models/models.h"

namespace anelm {

void build_llama_function(const ModelSpec& spec, const WeightStore& weights,
                          const FunctionShape& shape, ir::Program& program);
void build_gemma3_function(const ModelSpec& spec, const WeightStore& weights,
                           const FunctionShape& shape, ir::Program& program);

}  // namespace anelm
