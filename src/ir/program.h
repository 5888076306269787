// The program representation: what the CPU executes, what passes rewrite, and
// what the Core ML writer emits. A Program holds functions (prefill, decode)
// that share weights and states (the KV cache).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/tensor.h"
#include "ir/op.h"

namespace anelm::quant {
struct QuantizedMatrix;
}

namespace anelm::ir {

using ValueId = int32_t;
using WeightId = int32_t;
constexpr WeightId no_weight = -1;

// A named constant tensor. The bytes belong to the model's WeightStore, which
// must outlive the program. A quantized weight (quant::quantize_program) also
// owns its codes and tables; the executor then reads those and never the view,
// which still gives the dense shape and the original values.
struct Weight {
    std::string name;  // as stored, e.g. model.layers.0.self_attn.q_proj.weight
    TensorView view;
    std::shared_ptr<const quant::QuantizedMatrix> quantized;  // null: dense
    // What holds the bytes when a pass rewrote or moved the weight; the view
    // points into it. Null while the view is the model's own storage.
    std::shared_ptr<const void> storage;
};

// Every state is addressed by position along its third axis, so a sequence's
// state for positions below p never changes once p is reached: rolling back
// (rejected drafts, a reused prompt prefix) is only a matter of positions.
struct StateDecl {
    std::string name;             // model_model_kv_cache_0
    DType dtype = DType::f16;
    // KV: f16 [2 * attention layers, n_head_kv, n_ctx, head_dim];
    // causal_conv inputs: f16 [conv layers, 1, n_ctx, channels];
    // gated_delta: f32 [delta layers, 1, slots, value heads * dk * dv], the state
    // after position p at slot p % slots (a ring: positions up to slots - 1 back)
    std::vector<int64_t> shape;
};

// A half-precision device holds the delta rule's state times this, so that its
// small entries stay normal halves (the ANE lowering's value boost; the CPU's
// ane precision stores the state the same way).
constexpr float delta_state_boost = 64.0f;
// And its queries times this (the output is then times both).
constexpr float delta_query_boost = 16.0f;

// Rotary frequencies shared by the rope ops of a program (head_dim / 2 values).
struct RopeFreqs {
    std::vector<float> inv_freq;
    bool interleaved = false;
};

struct Attrs {
    float eps = 0;            // rms_norm
    float gain_offset = 0;    // rms_norm: Gemma's (1 + w)
    float scale = 1;          // attention: score scale; scale: the factor
    float softcap = 0;        // attention scores, softcap: cap * tanh(x / cap); 0: none
    int64_t window = 0;       // attention: keys in the last `window` positions only; 0: all
    int64_t n_head = 0;       // rope, attention (query heads)
    int64_t n_head_kv = 0;    // attention
    int64_t head_dim = 0;     // rope, attention; gated_delta: the key size; rms_norm
                              // without a gain: the group
    // gated_delta: n_head value heads of value_dim, n_head_kv key heads of
    // head_dim; value head h reads key head h % n_head_kv when heads_tiled,
    // else h / (n_head / n_head_kv).
    int64_t value_dim = 0;
    bool heads_tiled = false;
    int32_t layer = -1;       // (shared_)attention: K at state slot layer, V at n_layer + layer;
                              // causal_conv: its history at state slot layer
    int32_t state = -1;       // (shared_)attention, causal_conv, gated_delta: which state holds it
    int32_t rope = -1;        // rope: index into Program::ropes
    int64_t col0 = 0;         // columns: the first one taken
    // Any op: its output multiplied by this constant. The FP16 residual scaling
    // sets it on the ops that feed the residual stream; an emitter folds it into
    // the op's weights (a power of two, so folding is exact).
    float out_scale = 1;
};

// Every value is [rows, width]: rows is the function's token count T for
// per-token values, or one per sequence after last_row. Inputs are i32, the rest f32.
struct Node {
    Op op = Op::input;
    std::string name;             // stable and user-facing: blk.3.attn_norm
    std::vector<ValueId> inputs;
    WeightId weight = no_weight;  // embed, linear, rms_norm
    WeightId bias = no_weight;    // linear
    Attrs attrs;
    bool per_token = true;        // rows == T, otherwise rows == 1
    int64_t width = 0;
    DType dtype = DType::f32;
};

struct Function {
    std::string name;     // "prefill", "decode"
    int64_t n_tokens = 1; // T: the most tokens one call takes
    std::vector<Node> nodes;  // in execution order; a node's id is its index
    std::vector<ValueId> outputs;
};

struct Program {
    std::vector<Weight> weights;
    std::vector<StateDecl> states;
    std::vector<RopeFreqs> ropes;
    std::vector<Function> functions;

    const Function& function(const std::string& name) const;  // throws Error if absent
    WeightId add_weight(std::string name, const TensorView& view);
};

// Checks arities, input ids, widths and weight shapes; throws Error naming the node.
void verify(const Program& program);

// The index of the first node of `fn` that reads each of the program's
// weights (the node count for a weight none of them reads).
std::vector<size_t> first_readers(const Program& program, const Function& fn);

}  // namespace anelm::ir
