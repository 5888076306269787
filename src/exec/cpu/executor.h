// Runs the functions of an ir::Program on the CPU.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "base/thread_pool.h"
#include "exec/cpu/kv_cache.h"
#include "ir/program.h"
#include "kernels/kernels.h"

namespace anelm {

// f32: f32 activations. f16: every op's output rounded to IEEE half (overflow to
// inf), as a device that stores values in half precision would see them.
// ane: f16, and also the weights, rotary tables and attention scores stored as
// half, as a Core ML program converted for the Neural Engine holds them
// (docs/precision.md lists each behaviour and its source; an emulation).
enum class Precision { f32, f16, ane };

const char* precision_name(Precision p);
Precision precision_from_name(const std::string& name);  // throws Error

// The program's states (the KV cache) for one sequence.
struct ExecState {
    // One per StateDecl: f16 values, or f32 ones in pairs of halves (a ring).
    std::vector<std::vector<uint16_t>> buffers;
    // Per StateDecl: one past the last position written (the rings' reach).
    std::vector<int64_t> ends;
};

// One sequence's share of a batched call: `rows` consecutive tokens placed at
// positions pos0, pos0 + 1, ... of its own state.
struct ExecSegment {
    int64_t rows = 0;
    int64_t pos0 = 0;
    ExecState* state = nullptr;
};

class Executor {
public:
    // max_segments: the most sequences one call may run (values after last_row
    // hold a row for each); kv: how the attention layers' caches store rows.
    Executor(const ir::Program& program, ThreadPool& pool, Precision precision,
             int64_t max_segments = 1, KvType kv = KvType::f16);
    ~Executor();

    ExecState make_state() const;
    // Whether a call may start at pos0 on this state: anywhere up to what it
    // holds, except that a ring state (Qwen3.5's DeltaNet) reaches back only
    // its slots - 1 positions (position 0, a fresh start, always works).
    bool can_start(const ExecState& state, int64_t pos0) const;

    // Runs function `fn` (index into program.functions) on tokens placed at
    // positions pos0, pos0 + 1, ...; returns its first output, f32 [rows, width].
    std::span<const float> run(size_t fn, std::span<const int32_t> tokens, int64_t pos0,
                               ExecState& state);
    // Several sequences in one call, so every weight is read once for all of
    // them: tokens holds the segments' tokens one after another. A function
    // whose output comes after last_row returns one row per segment: the one
    // after its last token.
    std::span<const float> run(size_t fn, std::span<const int32_t> tokens,
                               std::span<const ExecSegment> segments);
    // Runs nodes [first, end) of function `fn` alone: the values of the nodes
    // before `first` must be what an earlier call on the same tokens left, as
    // restore_values() puts them back (the quantization search runs the model
    // again from one layer on). Returns the output when `end` reaches it.
    std::span<const float> run_nodes(size_t fn, std::span<const int32_t> tokens, int64_t pos0,
                                     ExecState& state, size_t first, size_t end);
    // The same for several sequences in one call (calibration walks all its
    // windows through the model together, one layer at a time).
    std::span<const float> run_nodes(size_t fn, std::span<const int32_t> tokens,
                                     std::span<const ExecSegment> segments, size_t first,
                                     size_t end);
    // Every node's value after the last call, to save and to put back.
    const std::vector<float>& values() const { return arena_; }
    void restore_values(const std::vector<float>& values) { arena_ = values; }

    // Called after every node with its output (f32 [rows, width]); for analysis.
    using Observer = std::function<void(const ir::Node& node, std::span<const float> value)>;
    void set_observer(Observer observer) { observer_ = std::move(observer); }

    const ir::Program& program() const { return program_; }
    Precision precision() const { return precision_; }
    KvType kv_type() const { return kv_; }
    int64_t n_ctx() const;

private:
    struct Plan;
    const Plan& plan_for(size_t fn);
    void run_node(const ir::Function& fn, const Plan& plan, size_t index, int64_t rows);
    // An op's output as the Neural Engine stores it (the ane precision): half,
    // subnormals flushed; the delta rule's output held times its q and v
    // boosts, as the packages carry it into its RMSNorm.
    static void store_as_device(const ir::Node& node, float* out, int64_t n);
    int64_t n_segments() const { return static_cast<int64_t>(segments_.size()); }
    // k and v null: attend over what another attention op wrote (shared_attention).
    void run_attention(const ir::Node& node, const float* q, const float* k, const float* v,
                       int64_t kv_width, float* out);
    void run_causal_conv(const ir::Node& node, const float* x, float* out);
    void run_gated_delta(const ir::Node& node, const float* qkv, const float* b, const float* a,
                         float* out);
    void check_rings(std::span<const ExecSegment> segments) const;
    // The linear nodes from `index` on that read the same input (q, k, v;
    // gate, up) get their products together, and run_node then only adds
    // their biases: dense weights of one dtype for one token in one dispatch,
    // quantized weights for any tokens by quant_matmul_stacked. Returns the
    // end of that run, `index` when it would hold fewer than two nodes.
    size_t stack_linears(const ir::Function& fn, const Plan& plan, size_t index, int64_t rows);
    // fn(begin, count) over [0, n), split across the threads when n is large.
    void in_pieces(int64_t n, const std::function<void(int64_t begin, int64_t count)>& fn);
    const std::vector<float>& weight_f32(ir::WeightId id);
    // The weight as the executor reads it: as stored, or converted to f16 under `ane`.
    const TensorView& weight_view(ir::WeightId id);
    // The layout of state `s` when the attention ops keep their cache there, else null.
    const KvLayout* kv_layout(size_t s) const;

    const ir::Program& program_;
    ThreadPool& pool_;
    Precision precision_;
    KvType kv_;
    std::vector<KvLayout> kv_layouts_;  // per state; n_layer 0 for states that are not a KV cache
    int64_t max_segments_;
    Observer observer_;
    std::vector<Plan*> plans_;
    std::vector<std::vector<float>> weights_f32_;     // small weights (gains, biases) as f32
    std::vector<std::vector<uint16_t>> weights_f16_;  // `ane`: weights not stored as f16
    std::vector<TensorView> weight_views_;            // `ane`: views of weights_f16_
    std::vector<float> unit_gain_;                    // ones: the gain of an rms_norm without one
    std::vector<float> arena_;
    std::vector<int32_t> ids_, positions_;
    std::vector<ExecSegment> segments_;                    // of this call
    std::vector<kernels::AttentionArgs> attention_calls_;  // one per segment
    std::vector<float> rope_cos_, rope_sin_;      // [rope][token][head_dim / 2] for this call
    size_t stacked_begin_ = 0, stacked_end_ = 0;  // nodes whose products stack_linears made
};

}  // namespace anelm
