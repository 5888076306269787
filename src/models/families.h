// The parts the families share: helpers for their graphs, and the Llama layout
// that Qwen2 and Qwen3 reuse.
#pragma once

#include <fmt/format.h>

#include <string>

#include "models/expected_tensors.h"
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
// A layer's attention: the model's query and KV heads of head_dim, scores scaled
// by 1/sqrt(head_dim), K and V in the program's state 0. The family sets the
// layer and what differs (the scale, a window, a softcap, another state).
ir::Attrs attention_attrs(const ModelSpec& spec, int64_t head_dim);
// The logits: the last token's row (unless the shape asks for every row's),
// the final norm `norm` and the LM head (the embedding table when tied).
ir::ValueId lm_head(ir::Builder& b, const ModelSpec& spec, const FunctionShape& shape,
                    ir::ValueId x, const char* norm, float gain_offset = 0,
                    std::string name = "logits");

// transformers multiplies embeddings by a constant cast to the table's dtype
// (a bf16 model scales by the bf16 rounding of the root): that constant.
float scale_as_stored(double factor, DType table);
// Gemma's embeddings: the token's row times sqrt(n_embd) as stored.
ir::ValueId scaled_embedding(ir::Builder& b, const ModelSpec& spec, const WeightStore& weights,
                             ir::ValueId ids);
// Sliding-window layers rotate with rope_local_base_freq over head_dim and no
// scaling; the other layers with the program's rope 0. Returns the sliding
// table's index, adding it on the first function built.
int32_t sliding_rope(const ModelSpec& spec, ir::Program& program);

// Llama's layout, which Qwen2 (q/k/v biases) and Qwen3 (q/k norms) share
// (models/llama.cpp): its graph, expected tensors and GGUF tensor names.
void build_llama_function(const ModelSpec& spec, const WeightStore& weights,
                          const FunctionShape& shape, ir::Program& program);
std::vector<ExpectedTensor> llama_tensors(const ModelSpec& spec);
std::string llama_gguf_tensor_name(std::string_view name);

}  // namespace anelm
