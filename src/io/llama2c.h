// llama2.c's legacy checkpoint (.bin): a header of 7 int32 (dim, hidden_dim,
// n_layers, n_heads, n_kv_heads, vocab_size, seq_len) and then f32 arrays, each
// stacked over the layers. Tensors are registered under Hugging Face names as
// views into the mapped file; per-layer tensors are slices of the stacks.
#pragma once

#include <cstdint>
#include <string>

#include "io/model_spec.h"
#include "io/weight_store.h"

namespace anelm {

// run.c starts from BOS (1) and stops generating when it samples BOS again: in
// these checkpoints, trained on documents separated by BOS, 1 ends a text and
// EOS (2) is never the signal.
inline constexpr int32_t llama2c_stop_id = 1;

// Whether the file starts with a llama2.c header whose sizes are all in range (or
// the versioned export's magic): how a checkpoint is told from other files,
// which almost never pass. load_llama2c then checks the length against it.
bool has_llama2c_header(const std::string& path);

ModelSpec load_llama2c(const std::string& path, WeightStore& store);

}  // namespace anelm
