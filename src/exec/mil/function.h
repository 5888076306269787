// Runs one function of a Core ML ML Program (MIL) on the CPU: the reference
// for what a converted model computes. The constructor compiles the function
// once (names to slots, const and constexpr_* values decoded, every op
// checked as known); run() executes the ops in order.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "coreml/blob_table.h"
#include "exec/mil/slot.h"
#include "exec/mil/states.h"
#include "exec/mil/tensor.h"

namespace anelm::milexec {

// f16: every fp16-typed op output (and fp16 input) is rounded to IEEE half,
// overflow to inf, as the Neural Engine stores values. f16_flush: also
// subnormal halves flushed to zero, as the Neural Engine computes. none: f32
// throughout.
enum class Rounding { none, f16, f16_flush };

// Rounds the values of an fp16-typed tensor as `rounding` says (in place).
void round_half_values(Rounding rounding, std::span<float> values);

// A function input, state or output with its declared type; -1 marks an
// unknown dimension.
struct TensorSpec {
    std::string name;
    mil::DataType dtype = mil::FLOAT32;
    std::vector<int64_t> shape;
};

struct CompiledOp;

class Function {
public:
    // `blobs` must outlive the function: large fp16 weights are read in place.
    // `dot` says how palettized weights kept as codes are multiplied.
    Function(const mil::Program& program, const std::string& function_name,
             const coreml::BlobTable& blobs, Rounding rounding = Rounding::f16,
             ThreadPool* pool = nullptr, QuantDot dot = QuantDot::exact);
    ~Function();
    Function(const Function&) = delete;
    Function& operator=(const Function&) = delete;

    const std::string& name() const { return name_; }
    const std::vector<TensorSpec>& inputs() const { return inputs_; }  // states excluded
    const std::vector<TensorSpec>& states() const { return states_; }
    const std::vector<TensorSpec>& outputs() const { return outputs_; }
    // The palettized weights read from their codes (Weight::palettized).
    int weights_kept_as_codes() const;
    // The delta-rule steps run as one kernel each (CompiledOp::Fusion::delta_step).
    int delta_steps_planned() const;

    // Runs the function on `inputs` (every declared input, by name), reading
    // and updating `states`; returns every block output by name. Inputs
    // passed as rvalues are moved in, not copied (a carried state of
    // megabytes per token).
    std::map<std::string, Tensor> run(std::map<std::string, Tensor> inputs, States& states) const;
    // The carried states updated where they lie (CompiledOp::carried_layer).
    int carried_states_planned() const;
    // The products run together with others of the same input
    // (CompiledOp::Fusion::stacked), the first of each stack included.
    int stacked_products_planned() const;
    // The RMSNorms run as one step each (CompiledOp::Fusion::rms_norm).
    int rms_norms_planned() const;

private:
    void compile(const mil::Function& fn, const mil::Block& block, const coreml::BlobTable& blobs);
    struct Deferred {  // a constexpr op, evaluated once every op is compiled
        const mil::Operation* op;
        int slot;
        std::string where;
    };
    void evaluate_constexprs(const std::vector<Deferred>& constexprs, const mil::Block& block,
                             const coreml::BlobTable& blobs);
    bool reads_as_matrix(const CompiledOp& c, std::string_view key) const;
    Slot evaluate_constexpr(const mil::Operation& op, const coreml::BlobTable& blobs,
                            const std::string& where, bool keep_codes) const;
    int add_slot(const std::string& name, const std::string& where);
    int slot_of(const std::string& name, const std::string& where) const;
    void mark_float_constant_readers();
    void plan_state_views();
    void plan_releases();
    void plan_in_place_updates();
    void plan_column_masks();
    void plan_delta_steps();
    void plan_carried_states();
    void plan_rms_norms();
    void plan_stacked_products();
    void plan_kept_slots();
    // The ops reading each slot, in order, each once.
    using Readers = std::vector<std::vector<size_t>>;
    Readers readers_by_slot() const;
    // The one slot op `c` binds to `key`, or -1.
    static int single_input(const CompiledOp& c, std::string_view key);
    // The op binding `slot` to its input `key` that is of `type`, when `slot`
    // has `n_readers` readers and is not a function output; else -1.
    int only_reader(const Readers& readers, int slot, std::string_view type, std::string_view key,
                    size_t n_readers = 1) const;
    // Whether op `c` binds `key` to a one-element constant equal to `want`
    // (an absent input counts as 0).
    bool constant_is(const CompiledOp& c, std::string_view key, double want) const;
    // Whether every input of op `c` but `key` is a constant.
    bool constant_except(const CompiledOp& c, std::string_view key) const;
    bool is_output(int slot) const;
    // The constant one-element tensor op `c` binds to `key`, or null.
    const Tensor* scalar_constant(const CompiledOp& c, std::string_view key) const;
    // Run slots of finished runs, all empty: the next run neither allocates
    // nor fills a vector of every slot. keep_spare empties kept_slots_, the
    // slots a run writes that no op releases.
    std::vector<Slot> spare_slots() const;
    void keep_spare(std::vector<Slot> slots) const;

    std::string name_;
    Rounding rounding_;
    QuantDot dot_;
    ThreadPool* pool_;
    std::unique_ptr<ThreadPool> own_pool_;  // when none is given: the caller's thread only
    std::vector<TensorSpec> inputs_, states_, outputs_;
    std::vector<int> input_slots_, state_slots_, output_slots_;
    std::map<std::string, int> slot_by_name_;
    std::vector<Slot> constants_;  // one per slot; empty where an op or input fills it
    std::vector<int> kept_slots_;
    std::vector<CompiledOp> ops_;
    mutable std::mutex spare_mutex_;
    mutable std::vector<std::vector<Slot>> spare_slots_;
    // For OpContext::detach_readers: the outputs of the ops that can view a
    // state, and which slots are the function's state inputs.
    std::vector<int> state_views_;
    std::vector<bool> is_state_input_;
};

}  // namespace anelm::milexec
