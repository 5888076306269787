// What an op implementation sees while a function runs: its inputs by key,
// its parameters, and where its outputs go (checked against their declared
// types, rounded to fp16 when the function rounds).
#pragma once

#include <algorithm>
#include <array>
#include <list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "exec/mil/function.h"
#include "exec/mil/slot.h"

namespace anelm::milexec {

class OpContext;
using OpFn = void (*)(OpContext&);

// Float values read in place: row-major, `shape` as declared.
struct FloatSpan {
    const float* data;
    const std::vector<int64_t>& shape;
};

struct OpDef {
    std::string_view type;
    OpFn run;
    std::vector<std::string_view> required;  // input keys that must be bound
};

// The op called `type`, or null.
const OpDef* find_op_def(std::string_view type);

// An op's inputs by key → slots. Ops have a few, so a flat list scanned in
// order: one run of memory per op, where a tree's nodes are each a cache miss
// when a token's weights have flushed the caches since the op last ran.
class InputMap {
public:
    using Entry = std::pair<std::string, std::vector<int>>;
    using const_iterator = std::vector<Entry>::const_iterator;

    const_iterator begin() const { return entries_.begin(); }
    const_iterator end() const { return entries_.end(); }
    const_iterator find(std::string_view key) const {
        return std::find_if(begin(), end(), [&](const Entry& e) { return e.first == key; });
    }
    size_t count(std::string_view key) const { return find(key) == end() ? 0 : 1; }
    const std::vector<int>& at(std::string_view key) const;
    std::vector<int>& operator[](std::string_view key);  // added when absent

private:
    std::vector<Entry> entries_;
};

// An output as declared: read from the program once, at compile time.
struct DeclaredOutput {
    mil::DataType dtype = mil::FLOAT32;
    bool ranked = true;          // false: any rank
    std::vector<int64_t> shape;  // -1 for an unknown dimension
};

struct CompiledOp {
    const mil::Operation* op = nullptr;
    std::string name;  // the op's name attribute
    std::string type;  // the op's type, held here so running never reads the program
    const OpDef* def = nullptr;
    InputMap inputs;  // key → slots
    std::vector<int> outputs;
    std::vector<DeclaredOutput> declared;
    std::vector<int> release;  // slots whose last use is this op
    bool in_place = false;     // slice_update writing into the state it read
    bool reads_float_constant = false;
    // matmul x @ yᵀ whose output columns only meet this additive mask (through
    // reshapes, scalings and tanh): columns it holds -inf in every row of are
    // not computed (attention scores past the causal end).
    int column_mask = -1;
    // Ops planned to run here with this one as one kernel (`fusion` says
    // which); those are folded: they run here, not in their turn.
    //  - delta_step: this mul (the decayed state) and the five ops that
    //    finish the delta rule's step, in order: recall, error, write, state,
    //    out (ops_delta.cpp);
    //  - rms_norm: this mul(x, -1) and the concat, layer_norm, slice and
    //    optional gain mul of an RMSNorm written for the Neural Engine;
    //  - stacked: later convs or linears reading this op's x by palettized
    //    weights, in one product (ops::stacked_products).
    enum class Fusion { none, delta_step, rms_norm, stacked };
    Fusion fusion = Fusion::none;
    std::vector<size_t> fused;
    bool folded = false;
    // A carried state (a function input of per-layer blocks on axis 0 that
    // the function returns updated and concatenated, as the delta rule's
    // matrices) updated where it lies: a slice of it views layer
    // `carried_layer` in place; the planned delta step reading that view
    // writes its new state there (`carried_step`); and the concatenation of
    // the steps' states returns the input's own buffer (`carried_input`, its
    // slot). Each checks at run time that its values are those views, else
    // runs as it would without the plan.
    int carried_layer = -1;
    bool carried_step = false;
    int carried_input = -1;
};

class OpContext {
public:
    // `slots` holds what the run made; a slot empty there is read from
    // `constants`. `state_views`: the slots an op can make a view of a state
    // (a read_state's reference, a slice's block), the only ones
    // detach_readers looks at.
    OpContext(const std::string& function, const CompiledOp& op, std::vector<Slot>& slots,
              const std::vector<Slot>& constants, const std::vector<bool>& is_state_input,
              const std::vector<int>& state_views, ThreadPool& pool, Rounding rounding)
        : function_(function),
          op_(op),
          slots_(slots),
          constants_(constants),
          is_state_input_(is_state_input),
          state_views_(state_views),
          pool_(pool),
          rounding_(rounding) {}

    const std::string& type() const { return op_.type; }
    bool in_place() const { return op_.in_place; }
    const CompiledOp& op() const { return op_; }
    // The slot of this op's CompiledOp::carried_input (run values only).
    Slot& carried_input() const { return slots_[static_cast<size_t>(op_.carried_input)]; }
    // The mask of CompiledOp::column_mask, null when there is none.
    const Tensor* column_mask() const;
    ThreadPool& pool() { return pool_; }

    bool has(std::string_view key) const { return op_.inputs.count(key) != 0; }
    int count(std::string_view key) const;  // bindings of a variadic input
    const Slot& slot(std::string_view key, int k = 0) const;
    // The input as a tensor; an fp16 weight or a state block is converted for
    // this op only.
    const Tensor& tensor(std::string_view key, int k = 0);
    // A float input's values where they lie (a state block in place).
    FloatSpan floats(std::string_view key);
    // The input as a tensor of the op's own: its buffer when this op is its
    // last reader and holds it alone (an output can then reuse it), else a copy.
    Tensor take(std::string_view key);

    int64_t get_int(std::string_view key);
    int64_t get_int(std::string_view key, int64_t fallback);
    std::vector<int64_t> get_ints(std::string_view key);
    bool get_bool(std::string_view key, bool fallback);
    std::vector<bool> get_bools(std::string_view key, size_t n);  // all false when absent
    float get_float(std::string_view key, float fallback);
    std::string get_string(std::string_view key, const std::string& fallback);

    int n_outputs() const { return static_cast<int>(op_.outputs.size()); }
    mil::DataType out_dtype(int i) const;
    // A zero-filled tensor for output i: its declared type, this shape, which
    // is checked against the declaration first.
    Tensor output(int i, std::vector<int64_t> shape) const;
    // Stores output i after checking its shape against the declaration.
    void set(int i, Tensor t);
    // As set, for values the op moved unchanged from its inputs (reshapes,
    // slices, concatenations): the function rounded them already and does
    // not again, unless they come from a constant (held as the program
    // wrote it) or a view of a weight.
    void set_moved(int i, Tensor t);
    // Stores a weight view or a state reference as output i, checked likewise.
    void set_slot(int i, Slot s);

    // Gives live values that read this state a copy of it, before it changes.
    void detach_readers(const Tensor* state, int except_slot);
    int slot_index(std::string_view key) const;

    // The element count of a shape; fails naming the op as shape_numel does.
    int64_t numel(const std::vector<int64_t>& shape) const;

    std::string where() const;
    template <typename... Args>
    [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
        anelm::fail("{}: {}", where(), fmt::format(format, std::forward<Args>(args)...));
    }

private:
    void check_output(int i, const std::vector<int64_t>& shape, mil::DataType dtype) const;
    void store(int i, Tensor t);

    const std::string& function_;
    const CompiledOp& op_;
    const Slot& value(int index) const;
    std::vector<Slot>& slots_;
    const std::vector<Slot>& constants_;
    const std::vector<bool>& is_state_input_;
    const std::vector<int>& state_views_;
    ThreadPool& pool_;
    Rounding rounding_;
    std::list<Tensor> scratch_;  // weights converted for this op (no allocation until one is)
};

// Helpers shared by the op implementations.

// Rounds values as op `ctx`'s output 0 is rounded (a fused step's
// intermediates, each as its own op would).
void round_as(const OpContext& ctx, Rounding rounding, float* v, int64_t n);

// Axis in [-rank, rank) made non-negative; fails naming the op otherwise.
int64_t normalize_axis(const OpContext& ctx, int64_t axis, int64_t rank);

// A shape seen as [outer, n, inner] around one axis.
struct AxisSplit {
    int64_t outer = 1, n = 1, inner = 1;
};
AxisSplit split_at(const std::vector<int64_t>& shape, int64_t axis);

// 1 + the last column of `rows` rows of `cols` values where any row holds
// something other than `value` (0 when none does).
int64_t last_column_unlike(const float* v, int64_t rows, int64_t cols, float value);

// Row-major strides of a shape.
std::vector<int64_t> strides_of(const std::vector<int64_t>& shape);

// numpy broadcasting of two shapes; fails naming the op when they do not fit.
std::vector<int64_t> broadcast_shape(const OpContext& ctx, const std::vector<int64_t>& a,
                                     const std::vector<int64_t>& b);
// Strides that read a tensor of shape `in` at every index of the broadcast shape `out`.
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in,
                                       const std::vector<int64_t>& out);

// The same walk over fewer axes: axes of size 1 dropped, and an axis merged
// into the one kept before it where every operand's stride there is this
// axis' stride times its size (broadcast axes, stride 0, included), so the
// last axis is as long as it can be.
template <size_t N>
void collapse_axes(std::vector<int64_t>& shape, std::array<std::vector<int64_t>, N>& strides) {
    std::vector<int64_t> out_shape;
    std::array<std::vector<int64_t>, N> out_strides;
    for (size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] == 1) continue;
        bool merge = !out_shape.empty();
        for (size_t j = 0; merge && j < N; ++j)
            merge = out_strides[j].back() == strides[j][d] * shape[d];
        if (merge) {
            out_shape.back() *= shape[d];
            for (size_t j = 0; j < N; ++j) out_strides[j].back() = strides[j][d];
            continue;
        }
        out_shape.push_back(shape[d]);
        for (size_t j = 0; j < N; ++j) out_strides[j].push_back(strides[j][d]);
    }
    shape = std::move(out_shape);
    strides = std::move(out_strides);
}

// Calls fn(out_index, offsets) for every element of `shape` in row-major order,
// where offsets[j] walks strides[j].
template <size_t N, typename Fn>
void for_each_offset(const std::vector<int64_t>& shape,
                     const std::array<std::vector<int64_t>, N>& strides, Fn fn) {
    const size_t rank = shape.size();
    const int64_t total = shape_numel(shape);
    if (total == 0) return;
    if (rank == 0) {
        fn(int64_t{0}, std::array<int64_t, N>{});
        return;
    }
    std::vector<int64_t> idx(rank, 0);
    std::array<int64_t, N> off{};
    const int64_t inner = shape[rank - 1];
    for (int64_t o = 0; o < total; o += inner) {
        std::array<int64_t, N> cur = off;
        for (int64_t k = 0; k < inner; ++k) {
            fn(o + k, cur);
            for (size_t j = 0; j < N; ++j) cur[j] += strides[j][rank - 1];
        }
        // Carry into the outer dimensions.
        for (size_t d = rank - 1; d-- > 0;) {
            ++idx[d];
            for (size_t j = 0; j < N; ++j) off[j] += strides[j][d];
            if (idx[d] < shape[d]) break;
            for (size_t j = 0; j < N; ++j) off[j] -= strides[j][d] * shape[d];
            idx[d] = 0;
        }
    }
}

}  // namespace anelm::milexec
