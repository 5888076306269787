// What the cost model needs to know about a model: how many weights each part
// has, how much KV cache a position costs, and the sizes that decide dispatch
// counts and the SRAM cliff. Built from a ModelSpec (Hugging Face folder,
// llama2.c file, synth preset) or taken from a small table of models anelm
// cannot load but the published measurements use.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "io/model_spec.h"

namespace anelm::plan {

// A linear weight of the layers, [n_out, n_in], by its tensor name.
struct LayerMatrix {
    std::string name;
    int64_t n_out = 0, n_in = 0;
};

struct ModelShape {
    std::string name;
    std::string source;  // where the shape comes from
    int64_t n_layer = 0;
    int64_t n_embd = 0;
    int64_t n_vocab = 0;
    int64_t n_ctx_train = 0;  // the longest sequence it was trained on; 0: not known
    double layer_params = 0;  // every weight of the transformer layers, read once per token
    double embed_params = 0;  // token embedding table: resident, one row read per token
    double head_params = 0;   // LM head, read once per token
    bool tied = false;        // the head is the embedding matrix
    // KV cache elements (K and V) per position: layers attending to the whole
    // context, and sliding-window layers that stop growing at `window`.
    double kv_per_pos = 0;
    double kv_window_per_pos = 0;
    int64_t window = 0;
    double state_elems = 0;     // fixed recurrent state (linear-attention layers)
    double attn_q_dim_sum = 0;  // sum over attention layers of n_head * head_dim
    // The largest weight matrix of a layer, n_out x n_in: the SRAM cliff test.
    int64_t big_n_out = 0, big_n_in = 0;
    // Every linear weight of the layers, where a width per matrix (a
    // converted folder's quant_recipe) is priced; empty for a known shape.
    std::vector<LayerMatrix> layer_matrices;

    double params() const { return layer_params + embed_params + (tied ? 0 : head_params); }
    // Elements of KV cache and state at a context of n_ctx positions.
    double kv_elems(int64_t n_ctx) const;
};

// The shape of a standard decoder (Llama, Qwen2, Qwen3, Gemma 3 text) from its spec.
ModelShape shape_from_spec(const ModelSpec& spec, std::string name);

// Models outside anelm's architectures, used by the published measurements:
// "gpt2-124m", "qwen3.5-2b", "gemma-4-e2b".
const std::vector<ModelShape>& known_shapes();

// A synth preset name, a known shape name, or a model path (Hugging Face folder or
// llama2.c file). Throws Error naming the argument and listing the names it knows.
ModelShape resolve_model(std::string_view what);

}  // namespace anelm::plan
