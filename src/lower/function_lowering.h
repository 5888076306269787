// Lowers the nodes of a program into one MIL function, the way the ANE wants
// them: activations fp16 in the channel layout [1, C, 1, T] (T tokens), linear
// as a 1x1 conv, RMSNorm as layer_norm over concat(x, -x), SiLU and GELU-tanh
// from primitive ops, rotary tables baked and gathered by position, attention
// written out against the KV state with the host's causal mask. The embedding
// part keeps the row layout [1, T, C] that its output has.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "coreml/mil_builder.h"
#include "ir/program.h"
#include "lower/ane_numerics.h"
#include "lower/ane_weights.h"

namespace anelm::lower {

using coreml::MilBuilder;
using coreml::MilValue;

// The KV caches as the packages hold them: one MLState (the notes: a second
// MLState in one graph fails at predict time), its rows as wide as the
// narrowest head, a wider head's K and V taking `parts` rows each (Gemma 4's
// full layers: two). A program with one KV cache keeps it as it is.
struct KvLayout {
    struct Rows {
        int64_t k = 0, v = 0, parts = 1;
    };
    ir::StateDecl state;
    std::map<std::pair<int32_t, int32_t>, Rows> rows;  // by (program state, layer)
};

KvLayout kv_layout(const ir::Program& program);

// What one package's functions share: its blobs, weights and rotary tables.
struct PackageContext {
    const ir::Program& program;
    coreml::BlobSet blobs;
    AneWeights weights;
    int64_t n_ctx;
    AneNumerics numerics;
    bool carries_states;  // the program has conv or delta-rule states
    KvLayout kv;
    std::map<int32_t, std::pair<coreml::mil::Value, coreml::mil::Value>> rope_tables;  // cos, sin

    PackageContext(const ir::Program& p, int64_t ctx, AneNumerics n = {});
};

// A state the packages carry as a function input and a function output
// instead of an MLState (the notes: a second MLState in one graph fails at
// predict time): the conv windows and the delta rule's matrices of the layers
// one part holds, stacked on axis 0.
struct CarriedState {
    MilValue input;
    std::map<int32_t, int64_t> index;  // the op's layer -> its place on axis 0
    std::vector<MilValue> updated;     // by place, as each layer is lowered
};

// True when state `state` of the program belongs to a causal_conv or a
// gated_delta: carried as inputs and outputs, not an MLState.
bool is_carried_state(const ir::Program& program, int32_t state);

class FunctionLowering {
public:
    FunctionLowering(PackageContext& package, const ir::Function& fn, coreml::mil::Block& block,
                     int64_t n_tokens)
        : pkg_(package), fn_(fn), b_(block, package.blobs), t_(n_tokens) {}

    MilBuilder& builder() { return b_; }
    int64_t n_tokens() const { return t_; }

    // The function inputs the nodes read: token ids (embeddings), positions,
    // the write position and the causal mask (chunks).
    MilValue input_ids, position_ids, current_pos, causal_mask;
    std::map<std::string, MilValue> state_values;  // by state name (the MLStates)
    std::map<int32_t, CarriedState> carried;       // by the program's state index
    // Rows of linear weights the head computes (its split into pieces); all when rows is 0.
    int64_t head_row0 = 0, head_rows = 0;
    std::string name_suffix;  // appended to every op name (the head's pieces)
    bool all_rows = false;    // every token's result goes on: last_row keeps them all

    // Binds a value in the channel layout.
    void bind(ir::ValueId id, MilValue value) {
        values_[id] = std::move(value);
        rows_.erase(id);
    }
    // Whether a lowered value is still in the row layout [1, T, C] of the
    // embeddings (and the elementwise ops on them); channels() turns it.
    bool in_rows(ir::ValueId id) const { return rows_.contains(id); }
    const MilValue& channels(ir::ValueId id);
    // Binds a value in the row layout (a function input standing for an embedding lookup).
    void bind_rows(ir::ValueId id, MilValue value) {
        values_[id] = std::move(value);
        rows_.insert(id);
    }
    const MilValue& value(ir::ValueId id) const;
    void lower(ir::ValueId id);

    // [1, T, C] <-> [1, C, 1, T]
    MilValue to_channels(const MilValue& rows, const std::string& name);
    MilValue to_rows(const MilValue& channels, const std::string& name);

    MilValue reshape(const MilValue& x, std::vector<int64_t> shape, const std::string& name);
    MilValue transpose(const MilValue& x, std::vector<int32_t> perm, const std::string& name);
    MilValue slice(const MilValue& x, std::vector<int32_t> begin, std::vector<int32_t> end,
                   const std::string& name);
    MilValue binary(const char* op, const MilValue& x, const MilValue& y, const std::string& name);
    MilValue scalar_mul(const MilValue& x, float factor, const std::string& name);
    MilValue unary(const char* op, const MilValue& x, const std::string& name);
    // The activations AneNumerics rewrites.
    MilValue silu(const MilValue& x, const std::string& name);
    MilValue softplus(const MilValue& x, const std::string& name);

    // Declares the carried-state inputs the conv and delta-rule nodes among
    // `nodes` read; after they are lowered, carried_outputs() stacks their
    // updated states into one output per input (named as the input + "_out").
    void carry_states(const std::vector<ir::ValueId>& nodes);
    std::vector<MilValue> carried_outputs();

private:
    // The op keeps the row layout: it is elementwise and all its inputs have it.
    bool keeps_rows(const ir::Node& node) const;
    MilValue lower_node(const ir::Node& node, const std::string& name);
    MilValue linear(const ir::Node& node, const std::string& name);
    MilValue rms_norm(const ir::Node& node, const std::string& name);
    MilValue gelu_tanh_mul(const MilValue& gate, const MilValue& up, const std::string& name);
    MilValue causal_conv(const ir::Node& node, const std::string& name);
    MilValue gated_delta(const ir::Node& node, const std::string& name);
    // [1, n d, 1, T] -> [T, n, d]: per-token heads of the delta rule.
    MilValue token_heads(const MilValue& x, int64_t n, int64_t d, const std::string& name);
    MilValue l2_normalized(const MilValue& x, const std::string& name);
    MilValue rope(const ir::Node& node, const std::string& name);
    MilValue attention(const ir::Node& node, const std::string& name);
    // K or V rows of a layer from the cache read `cache`: [1, n_head_kv, n_ctx, head_dim].
    MilValue cached(const MilValue& cache, int64_t row0, int64_t parts, int64_t n_head_kv,
                    const std::string& name);
    MilValue window_mask(int64_t window);
    std::pair<MilValue, MilValue> rope_rows(int32_t rope);
    MilValue kv_write(const std::string& state, const MilValue& update, int64_t slot,
                      const std::string& name);

    PackageContext& pkg_;
    const ir::Function& fn_;
    MilBuilder b_;
    int64_t t_;
    std::map<ir::ValueId, MilValue> values_;
    std::set<ir::ValueId> rows_;                // values in the row layout
    std::map<ir::ValueId, MilValue> channels_;  // and their channel-layout forms
    std::map<int32_t, std::pair<MilValue, MilValue>> rope_rows_;
    std::map<int64_t, MilValue> window_masks_;
    // Values left multiplied by a constant for the RMSNorms that read them.
    std::map<ir::ValueId, float> boosted_;
};

// A MIL name for an IR value name: blk.3.attn_norm -> blk_3_attn_norm.
std::string mil_name(std::string_view ir_name);

}  // namespace anelm::lower
