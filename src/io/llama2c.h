// llama2.c's legacy checkpoint (.bin): a header of 7 int32 (dim, hidden_dim,
// n_layers, n_heads, n_kv_heads, vocab_size, seq_len) and then f32 arrays, each
// stacked over the layers. Tensors are registered under Hugging Face names as
// views into the mapped file; per-layer tensors are slices of the stacks.
#pragma once

#include <string>

#include "io/model_spec.h"
#include "io/weight_store.h"

namespace anelm {

ModelSpec load_llama2c(const std::string& path, WeightStore& store);

}  // namespace anelm
