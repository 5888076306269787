#include "exec/mil/function.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "base/error.h"
#include "base/half.h"
#include "coreml/model_values.h"
#include "exec/mil/constexpr_ops.h"
#include "exec/mil/literal.h"
#include "exec/mil/op_context.h"
#include "exec/mil/ops.h"
#include "kernels/kernels.h"
#include "kernels/quant_kernels.h"

namespace anelm::milexec {

namespace {

// The most ops one fused step runs (a split LM head's 16 products).
constexpr size_t max_fused = kernels::quant_max_stacked;

// Runs a planned step (CompiledOp::fused); false when its values do not fit it.
bool run_fused(CompiledOp::Fusion fusion, std::span<OpContext* const> step, Rounding rounding) {
    switch (fusion) {
        case CompiledOp::Fusion::delta_step:
            return ops::delta_step(step, rounding);
        case CompiledOp::Fusion::rms_norm:
            return ops::rms_norm_step(step, rounding);
        case CompiledOp::Fusion::stacked:
            return ops::stacked_products(step);
        case CompiledOp::Fusion::none:
            break;
    }
    return false;
}

TensorSpec spec_of(const std::string& name, const mil::TensorType& type) {
    return {name, type.datatype(), coreml::tensor_shape(type)};
}

bool shape_fits(const std::vector<int64_t>& declared, const std::vector<int64_t>& actual) {
    if (declared.size() != actual.size()) return false;
    for (size_t d = 0; d < declared.size(); ++d)
        if (declared[d] >= 0 && declared[d] != actual[d]) return false;
    return true;
}

}  // namespace

void round_half_values(Rounding rounding, std::span<float> values) {
    if (rounding == Rounding::none) return;
    kernels::round_to_f16_row(values.data(), static_cast<int64_t>(values.size()));
    if (rounding == Rounding::f16_flush)
        flush_f16_subnormals(values.data(), static_cast<int64_t>(values.size()));
}

Function::Function(const mil::Program& program, const std::string& function_name,
                   const coreml::BlobTable& blobs, Rounding rounding, ThreadPool* pool,
                   QuantDot dot)
    : name_(function_name), rounding_(rounding), dot_(dot), pool_(pool) {
    if (!pool_) {
        own_pool_ = std::make_unique<ThreadPool>(1);
        pool_ = own_pool_.get();
    }
    auto fn = program.functions().find(function_name);
    if (fn == program.functions().end()) fail("function {}: not in the program", function_name);
    auto block = fn->second.block_specializations().find(fn->second.opset());
    if (block == fn->second.block_specializations().end())
        fail("function {}: no block for opset {}", function_name, fn->second.opset());
    compile(fn->second, block->second, blobs);
}

Function::~Function() = default;

int Function::add_slot(const std::string& name, const std::string& where) {
    const int slot = static_cast<int>(constants_.size());
    if (!name.empty() && !slot_by_name_.emplace(name, slot).second)
        fail("{}: value {} is defined twice", where, name);
    constants_.emplace_back();
    return slot;
}

int Function::slot_of(const std::string& name, const std::string& where) const {
    auto it = slot_by_name_.find(name);
    if (it == slot_by_name_.end()) fail("{}: names no value {}", where, name);
    return it->second;
}

void Function::compile(const mil::Function& fn, const mil::Block& block,
                       const coreml::BlobTable& blobs) {
    for (const mil::NamedValueType& in : fn.inputs()) {
        const std::string where = fmt::format("function {}, input {}", name_, in.name());
        const int slot = add_slot(in.name(), where);
        if (in.type().has_statetype()) {
            states_.push_back(spec_of(in.name(), in.type().statetype().wrappedtype().tensortype()));
            state_slots_.push_back(slot);
        } else if (in.type().has_tensortype()) {
            inputs_.push_back(spec_of(in.name(), in.type().tensortype()));
            input_slots_.push_back(slot);
        } else {
            fail("{}: only tensor and state inputs are supported", where);
        }
    }
    // constexpr ops are evaluated once every op is compiled: a palettized
    // weight that only matrix products read stays as its codes.
    std::vector<Deferred> constexprs;
    for (const mil::Operation& op : block.operations()) {
        std::string op_name = coreml::op_name(op);
        if (op_name.empty() && op.outputs_size() > 0) op_name = op.outputs(0).name();
        const std::string where = fmt::format("function {}, op {} ({})", name_, op_name, op.type());
        if (op.type() == "const" || is_constexpr(op.type())) {
            if (op.outputs_size() != 1) fail("{}: a constant has one output", where);
            const int slot = add_slot(op.outputs(0).name(), where);
            if (op.type() == "const") {
                auto val = op.attributes().find("val");
                if (val == op.attributes().end()) fail("{}: no val attribute", where);
                constants_[static_cast<size_t>(slot)] = decode_literal(val->second, blobs, where);
                continue;
            }
            constexprs.push_back({&op, slot, where});
            continue;
        }
        CompiledOp c;
        c.op = &op;
        c.name = op_name;
        c.type = op.type();
        c.def = find_op_def(op.type());
        if (!c.def) fail("{}: unknown op", where);
        for (const auto& [key, arg] : op.inputs()) {
            std::vector<int>& slots = c.inputs[key];
            for (const auto& b : arg.arguments()) {
                if (b.has_value()) {
                    const int slot = add_slot("", where);
                    constants_[static_cast<size_t>(slot)] = decode_literal(b.value(), blobs, where);
                    slots.push_back(slot);
                } else {
                    slots.push_back(slot_of(b.name(), fmt::format("{}: input {}", where, key)));
                }
            }
        }
        for (std::string_view key : c.def->required)
            if (!c.inputs.count(key)) fail("{}: missing input {}", where, key);
        for (const mil::NamedValueType& out : op.outputs()) {
            if (!out.type().has_tensortype())
                fail("{}: output {} is not a tensor", where, out.name());
            c.outputs.push_back(add_slot(out.name(), where));
            const mil::TensorType& type = out.type().tensortype();
            c.declared.push_back({type.datatype(), type.rank() >= 0, coreml::tensor_shape(type)});
        }
        ops_.push_back(std::move(c));
    }
    evaluate_constexprs(constexprs, block, blobs);
    for (const std::string& out : block.outputs()) {
        const std::string where = fmt::format("function {}, output {}", name_, out);
        const int slot = slot_of(out, where);
        output_slots_.push_back(slot);
        TensorSpec spec{out, mil::FLOAT32, {}};
        for (const CompiledOp& c : ops_)
            for (size_t k = 0; k < c.outputs.size(); ++k)
                if (c.outputs[k] == slot)
                    spec = spec_of(out, c.op->outputs(static_cast<int>(k)).type().tensortype());
        for (size_t k = 0; k < inputs_.size(); ++k)
            if (input_slots_[k] == slot) spec = inputs_[k];
        if (const Slot& s = constants_[static_cast<size_t>(slot)]; !s.empty())
            spec = {out, s.dtype(), s.shape()};
        outputs_.push_back(spec);
    }
    mark_float_constant_readers();
    plan_state_views();
    plan_releases();
    plan_in_place_updates();
    plan_column_masks();
    plan_delta_steps();
    plan_carried_states();
    plan_rms_norms();
    plan_stacked_products();
    plan_kept_slots();
}

// Constants are the values a function holds that it did not round (a
// subnormal epsilon stays what the program says): an op that moves values
// from one rounds them as it stores them (OpContext::set_moved).
void Function::mark_float_constant_readers() {
    for (CompiledOp& c : ops_)
        for (const auto& [key, slots] : c.inputs)
            for (int s : slots) {
                const Slot& k = constants_[static_cast<size_t>(s)];
                if (k.weight || (k.tensor && is_float_type(k.tensor->dtype)))
                    c.reads_float_constant = true;
            }
}

void Function::plan_state_views() {
    for (const CompiledOp& c : ops_)
        if (c.type == "read_state" || c.type == "slice_by_index" || c.type == "slice_update")
            state_views_.insert(state_views_.end(), c.outputs.begin(), c.outputs.end());
    is_state_input_.assign(constants_.size(), false);
    for (int s : state_slots_) is_state_input_[static_cast<size_t>(s)] = true;
}

// Whether op `c` reads its input `key` as the weight of a matrix product the
// quantized kernels compute: conv (1x1 kernels are what palettized weights
// allow, checked by their shape; groups 1), linear, matmul x @ yᵀ.
bool Function::reads_as_matrix(const CompiledOp& c, std::string_view key) const {
    const auto constant = [&](std::string_view k, int64_t fallback) -> int64_t {
        if (!c.inputs.count(k)) return fallback;
        const Tensor* t = scalar_constant(c, k);
        if (!t) return -1;
        return t->i.empty() ? static_cast<int64_t>(t->f[0]) : t->i[0];
    };
    const std::string& type = c.type;
    if (type == "conv") return key == "weight" && constant("groups", 1) == 1;
    if (type == "linear") return key == "weight";
    return type == "matmul" && key == "y" && constant("transpose_y", 0) == 1 &&
           constant("transpose_x", 0) == 0;
}

void Function::evaluate_constexprs(const std::vector<Deferred>& constexprs, const mil::Block& block,
                                   const coreml::BlobTable& blobs) {
    std::vector<bool> matrix_only(constants_.size(), true);
    for (const CompiledOp& c : ops_)
        for (const auto& [key, slots] : c.inputs)
            if (!reads_as_matrix(c, key))
                for (int s : slots) matrix_only[static_cast<size_t>(s)] = false;
    for (const Deferred& d : constexprs)
        for (const auto& [key, arg] : d.op->inputs())
            for (const auto& b : arg.arguments())
                if (!b.has_value())
                    matrix_only[static_cast<size_t>(slot_of(b.name(), d.where))] = false;
    for (const std::string& out : block.outputs())
        if (const auto it = slot_by_name_.find(out); it != slot_by_name_.end())
            matrix_only[static_cast<size_t>(it->second)] = false;
    // Those whose inputs are all literals are evaluated together across the
    // pool (dequantizing a model's weights is most of compiling it); one that
    // reads other constants waits for those before it.
    std::vector<const Deferred*> batch;
    const auto evaluate = [&](const Deferred& d) {
        constants_[static_cast<size_t>(d.slot)] =
            evaluate_constexpr(*d.op, blobs, d.where, matrix_only[static_cast<size_t>(d.slot)]);
    };
    const auto flush = [&] {
        pool_->run(static_cast<int64_t>(batch.size()),
                   [&](int64_t k, int) { evaluate(*batch[static_cast<size_t>(k)]); });
        batch.clear();
    };
    for (const Deferred& d : constexprs) {
        const bool literal =
            std::all_of(d.op->inputs().begin(), d.op->inputs().end(), [](const auto& in) {
                return std::all_of(in.second.arguments().begin(), in.second.arguments().end(),
                                   [](const auto& b) { return b.has_value(); });
            });
        if (literal) {
            batch.push_back(&d);
            continue;
        }
        flush();
        evaluate(d);
    }
    flush();
}

Slot Function::evaluate_constexpr(const mil::Operation& op, const coreml::BlobTable& blobs,
                                  const std::string& where, bool keep_codes) const {
    // iOS18 constexpr ops bind their inputs; iOS16 ones use attributes.
    auto param = [&](const std::string& key) -> ConstInput {
        if (auto in = op.inputs().find(key); in != op.inputs().end()) {
            if (in->second.arguments_size() != 1)
                fail("{}: input {} must have one binding", where, key);
            const auto& b = in->second.arguments(0);
            if (b.has_value()) return {&b.value(), {}};
            const Slot& s = constants_[static_cast<size_t>(slot_of(b.name(), where))];
            if (s.empty()) fail("{}: input {} must be a constant", where, key);
            return {nullptr, s};
        }
        if (auto a = op.attributes().find(key); a != op.attributes().end()) return {&a->second, {}};
        return {};
    };
    return run_constexpr(op, param, blobs, where, keep_codes, dot_);
}

int Function::weights_kept_as_codes() const {
    return static_cast<int>(std::count_if(constants_.begin(), constants_.end(), [](const Slot& s) {
        return s.weight && s.weight->palettized;
    }));
}

int Function::delta_steps_planned() const {
    return static_cast<int>(std::count_if(ops_.begin(), ops_.end(), [](const CompiledOp& c) {
        return c.fusion == CompiledOp::Fusion::delta_step;
    }));
}

int Function::carried_states_planned() const {
    return static_cast<int>(std::count_if(
        ops_.begin(), ops_.end(), [](const CompiledOp& c) { return c.carried_input >= 0; }));
}

// Frees every intermediate after its last reader, so a model's activations
// do not all stay alive until the end of a run.
void Function::plan_releases() {
    std::vector<int> last(constants_.size(), -1);
    for (size_t k = 0; k < ops_.size(); ++k)
        for (const auto& [key, slots] : ops_[k].inputs)
            for (int s : slots) last[static_cast<size_t>(s)] = static_cast<int>(k);
    // Outputs nothing reads (unused split parts) go right after their op.
    for (size_t k = 0; k < ops_.size(); ++k)
        for (int s : ops_[k].outputs)
            if (last[static_cast<size_t>(s)] < 0)
                last[static_cast<size_t>(s)] = static_cast<int>(k);
    for (int s : output_slots_) last[static_cast<size_t>(s)] = -1;
    for (size_t s = 0; s < last.size(); ++s)
        if (last[s] >= 0) ops_[static_cast<size_t>(last[s])].release.push_back(static_cast<int>(s));
}

// read_state → slice_update → write_state of the same state, with nothing else
// reading the state or the intermediate values, updates the state in place
// instead of copying a KV cache per op.
std::vector<std::vector<size_t>> Function::readers_by_slot() const {
    std::vector<std::vector<size_t>> readers(constants_.size());
    for (size_t k = 0; k < ops_.size(); ++k)
        for (const auto& [key, slots] : ops_[k].inputs)
            for (int s : slots) {
                std::vector<size_t>& r = readers[static_cast<size_t>(s)];
                if (r.empty() || r.back() != k) r.push_back(k);
            }
    return readers;
}

bool Function::is_output(int slot) const {
    return std::count(output_slots_.begin(), output_slots_.end(), slot) != 0;
}

const Tensor* Function::scalar_constant(const CompiledOp& c, std::string_view key) const {
    const auto it = c.inputs.find(key);
    if (it == c.inputs.end()) return nullptr;
    const Slot& s = constants_[static_cast<size_t>(it->second.at(0))];
    return s.tensor && s.tensor->numel() == 1 ? s.tensor.get() : nullptr;
}

int Function::single_input(const CompiledOp& c, std::string_view key) {
    const auto it = c.inputs.find(key);
    return it == c.inputs.end() || it->second.size() != 1 ? -1 : it->second[0];
}

int Function::only_reader(const Readers& readers, int slot, std::string_view type,
                          std::string_view key, size_t n_readers) const {
    if (slot < 0 || is_output(slot)) return -1;
    const std::vector<size_t>& r = readers[static_cast<size_t>(slot)];
    if (r.size() != n_readers) return -1;
    for (size_t k : r) {
        const auto it = ops_[k].inputs.find(key);
        if (ops_[k].type == type && it != ops_[k].inputs.end() &&
            std::count(it->second.begin(), it->second.end(), slot))
            return static_cast<int>(k);
    }
    return -1;
}

bool Function::constant_is(const CompiledOp& c, std::string_view key, double want) const {
    if (!c.inputs.count(key)) return want == 0;
    const Tensor* t = scalar_constant(c, key);
    return t && (t->i.empty() ? static_cast<double>(t->f[0]) : t->i[0]) == want;
}

bool Function::constant_except(const CompiledOp& c, std::string_view key) const {
    for (const auto& [k, slots] : c.inputs)
        for (int s : slots)
            if (k != key && constants_[static_cast<size_t>(s)].empty()) return false;
    return true;
}

void Function::plan_in_place_updates() {
    auto producer = [&](int slot) -> int {
        for (size_t k = 0; k < ops_.size(); ++k)
            for (int o : ops_[k].outputs)
                if (o == slot) return static_cast<int>(k);
        return -1;
    };
    const std::vector<std::vector<size_t>> readers = readers_by_slot();
    for (size_t u = 0; u < ops_.size(); ++u) {
        CompiledOp& upd = ops_[u];
        if (upd.type != "slice_update" || !upd.inputs.count("x")) continue;
        const int x = upd.inputs.at("x")[0];
        const int r = producer(x);
        if (r < 0 || ops_[static_cast<size_t>(r)].type != "read_state") continue;
        const int state = ops_[static_cast<size_t>(r)].inputs.at("input")[0];
        const std::vector<size_t>& x_readers = readers[static_cast<size_t>(x)];
        const std::vector<size_t>& out_readers = readers[static_cast<size_t>(upd.outputs[0])];
        if (x_readers.size() != 1 || out_readers.size() != 1 || is_output(x) ||
            is_output(upd.outputs[0]))
            continue;
        const CompiledOp& w = ops_[out_readers[0]];
        if (w.type != "write_state" || w.inputs.at("input")[0] != state ||
            w.inputs.at("data")[0] != upd.outputs[0])
            continue;
        // No other access to the state between the read and the write.
        bool alone = true;
        for (size_t k = static_cast<size_t>(r) + 1; k < out_readers[0]; ++k)
            for (const auto& [key, slots] : ops_[k].inputs)
                if (std::count(slots.begin(), slots.end(), state)) alone = false;
        upd.in_place = alone;
    }
}

// Attention's scores (x @ yᵀ) meet the causal mask in an add, at most after
// reshapes, scalings by a constant and tanh (a soft cap), with nothing else
// reading them on the way: a column the mask holds at -inf becomes -inf
// whatever the product gave, so the product may leave it at 0. (Only a cached
// key of inf or NaN would have given NaN there instead.)
void Function::plan_column_masks() {
    const std::vector<std::vector<size_t>> readers = readers_by_slot();
    // A finite, nonzero constant: it keeps a 0 at 0.
    const auto keeps_zero = [&](const CompiledOp& c, std::string_view key) {
        const Tensor* t = scalar_constant(c, key);
        return t && t->f.size() == 1 && std::isfinite(t->f[0]) && t->f[0] != 0.0f;
    };
    for (CompiledOp& scores : ops_) {
        if (scores.type != "matmul" || !reads_as_matrix(scores, "y")) continue;
        int value = scores.outputs.at(0);
        for (int hops = 0; hops < 8; ++hops) {
            const std::vector<size_t>& next = readers[static_cast<size_t>(value)];
            if (next.size() != 1 || is_output(value)) break;
            const CompiledOp& c = ops_[next[0]];
            const std::string& type = c.type;
            const auto other = [&](std::string_view key) {
                const std::vector<int>& x = c.inputs.at("x");
                return x.at(0) == value ? c.inputs.find(key)->second.at(0) : x.at(0);
            };
            if (type == "add" && c.inputs.count("y")) {
                if (other("y") != value) scores.column_mask = other("y");
                break;
            }
            const bool passes = type == "reshape" || type == "tanh" ||
                                ((type == "mul" || type == "real_div") && c.inputs.count("y") &&
                                 keeps_zero(c, c.inputs.at("x").at(0) == value ? "y" : "x"));
            if (!passes || c.outputs.size() != 1) break;
            value = c.outputs[0];
        }
    }
}

// The delta rule's step as the lowering writes it (ops_delta.cpp): mul(S,
// decay) → matmul(k, S') → sub(v, ·) → matmul((beta k)ᵀ, ·) → add(S', ·) →
// matmul(q, S''), each intermediate read only inside the step, and what the
// step reads from outside made before its first op, so the six can run there.
void Function::plan_delta_steps() {
    const Readers readers = readers_by_slot();
    std::vector<int> producer(constants_.size(), -1);
    for (size_t k = 0; k < ops_.size(); ++k)
        for (int o : ops_[k].outputs) producer[static_cast<size_t>(o)] = static_cast<int>(k);
    const auto input = single_input;
    const auto only_reader = [&](int slot, std::string_view type, std::string_view key,
                                 size_t n_readers) {
        return this->only_reader(readers, slot, type, key, n_readers);
    };
    const auto is_matmul = [&](int k, bool tx) {
        return k >= 0 && ops_[static_cast<size_t>(k)].type == "matmul" &&
               constant_is(ops_[static_cast<size_t>(k)], "transpose_x", tx) &&
               constant_is(ops_[static_cast<size_t>(k)], "transpose_y", 0);
    };
    for (size_t a = 0; a < ops_.size(); ++a) {
        const CompiledOp& mul = ops_[a];
        if (mul.type != "mul" || mul.outputs.size() != 1) continue;
        const int decayed = mul.outputs[0];
        const int recall = only_reader(decayed, "matmul", "y", 2);
        if (!is_matmul(recall, false)) continue;
        const int error = only_reader(ops_[static_cast<size_t>(recall)].outputs[0], "sub", "y", 1);
        if (error < 0) continue;
        const int write =
            only_reader(ops_[static_cast<size_t>(error)].outputs[0], "matmul", "y", 1);
        if (!is_matmul(write, true)) continue;
        const int state = only_reader(ops_[static_cast<size_t>(write)].outputs[0], "add", "y", 1);
        if (state < 0 || input(ops_[static_cast<size_t>(state)], "x") != decayed) continue;
        const int next = ops_[static_cast<size_t>(state)].outputs[0];
        int out = -1;
        for (size_t k : readers[static_cast<size_t>(next)])
            if (ops_[k].type == "matmul" && input(ops_[k], "y") == next &&
                is_matmul(static_cast<int>(k), false))
                out = static_cast<int>(k);
        if (out < 0) continue;
        const std::vector<size_t> step = {static_cast<size_t>(recall), static_cast<size_t>(error),
                                          static_cast<size_t>(write), static_cast<size_t>(state),
                                          static_cast<size_t>(out)};
        if (!std::is_sorted(step.begin(), step.end()) || step[0] <= a) continue;
        const auto made_before = [&](int slot) {
            return slot >= 0 && producer[static_cast<size_t>(slot)] < static_cast<int>(a);
        };
        if (!made_before(input(ops_[step[0]], "x")) || !made_before(input(ops_[step[1]], "x")) ||
            !made_before(input(ops_[step[2]], "x")) || !made_before(input(ops_[step[4]], "x")))
            continue;
        ops_[a].fusion = CompiledOp::Fusion::delta_step;
        ops_[a].fused = step;
        for (size_t k : step) ops_[k].folded = true;
    }
}

// A carried state's layers updated where they lie (CompiledOp::carried_layer):
// a float input that only slices read, each slice read only by the decay of a
// planned delta step, each step's new state read only by its own output
// product and the next step's decay (a prefill's tokens), the last one's by
// one concat on axis 0 that is a function output of the input's
// type and shape and takes one layer per slice. The input then stays alive
// until that concat returns it.
void Function::plan_carried_states() {
    const Readers readers = readers_by_slot();
    const auto input = single_input;
    for (size_t k = 0; k < inputs_.size(); ++k) {
        const int in = input_slots_[k];
        const TensorSpec& spec = inputs_[k];
        const std::vector<size_t>& slices = readers[static_cast<size_t>(in)];
        if (!is_float_type(spec.dtype) || spec.shape.empty() || is_output(in) || slices.empty() ||
            static_cast<int64_t>(slices.size()) != spec.shape[0])
            continue;
        struct Layer {
            size_t slice;
            std::vector<size_t> steps;  // a prefill's tokens, one after the other
            int position;
        };
        std::vector<Layer> layers;
        int concat = -1;
        for (size_t r : slices) {
            const CompiledOp& slice = ops_[r];
            if (slice.type != "slice_by_index" || input(slice, "x") != in) break;
            Layer layer{r, {}, -1};
            int value = slice.outputs.at(0);  // the state the next step reads
            if (readers[static_cast<size_t>(value)].size() != 1 || is_output(value)) break;
            size_t reader = readers[static_cast<size_t>(value)][0];
            // Steps, each reading the state the one before wrote, up to the concat.
            while (ops_[reader].fusion == CompiledOp::Fusion::delta_step &&
                   input(ops_[reader], "x") == value) {
                const CompiledOp& decay = ops_[reader];
                layer.steps.push_back(reader);
                value = ops_[decay.fused[3]].outputs.at(0);
                const std::vector<size_t>& next_readers = readers[static_cast<size_t>(value)];
                if (next_readers.size() != 2 || is_output(value)) break;
                reader = next_readers[0] == decay.fused[4] ? next_readers[1] : next_readers[0];
            }
            const std::vector<int>* values =
                ops_[reader].type == "concat" ? &ops_[reader].inputs.at("values") : nullptr;
            if (layer.steps.empty() || !values ||
                (concat >= 0 && concat != static_cast<int>(reader)) ||
                std::count(values->begin(), values->end(), value) != 1)
                break;
            concat = static_cast<int>(reader);
            layer.position = static_cast<int>(std::find(values->begin(), values->end(), value) -
                                              values->begin());
            layers.push_back(std::move(layer));
        }
        if (layers.size() != slices.size()) continue;
        const CompiledOp& c = ops_[static_cast<size_t>(concat)];
        if (c.inputs.at("values").size() != slices.size() || !constant_is(c, "axis", 0) ||
            !constant_is(c, "interleave", 0) || !is_output(c.outputs.at(0)) ||
            c.declared.at(0).dtype != spec.dtype || c.declared.at(0).shape != spec.shape)
            continue;
        for (const Layer& l : layers) {
            ops_[l.slice].carried_layer = l.position;
            for (size_t step : l.steps) ops_[step].carried_step = true;
        }
        ops_[static_cast<size_t>(concat)].carried_input = in;
        for (CompiledOp& op : ops_) std::erase(op.release, in);
    }
}

// RMSNorm as the lowering writes it for the Neural Engine, a layer_norm of
// [x, -x] (whose mean is 0) of which the first half is kept:
// mul(x, -1) → concat([x, ·]) → layer_norm → slice_by_index → mul(·, gain),
// the gain optional, each intermediate read only by the next op, every other
// input a constant. ops::rms_norm_step checks the shapes when it runs.
void Function::plan_rms_norms() {
    const Readers readers = readers_by_slot();
    for (size_t a = 0; a < ops_.size(); ++a) {
        CompiledOp& neg = ops_[a];
        const int x = single_input(neg, "x");
        if (neg.type != "mul" || neg.folded || !neg.fused.empty() || x < 0 ||
            neg.outputs.size() != 1 || !constant_is(neg, "y", -1.0))
            continue;
        const int both = only_reader(readers, neg.outputs[0], "concat", "values");
        if (both < 0) continue;
        const CompiledOp& cat = ops_[static_cast<size_t>(both)];
        if (cat.inputs.at("values") != std::vector<int>{x, neg.outputs[0]} ||
            !constant_except(cat, "values") || !constant_is(cat, "interleave", 0))
            continue;
        const int ln = only_reader(readers, cat.outputs.at(0), "layer_norm", "x");
        if (ln < 0 || !constant_except(ops_[static_cast<size_t>(ln)], "x") ||
            ops_[static_cast<size_t>(ln)].inputs.count("gamma") ||
            ops_[static_cast<size_t>(ln)].inputs.count("beta"))
            continue;
        const int half = only_reader(readers, ops_[static_cast<size_t>(ln)].outputs.at(0),
                                     "slice_by_index", "x");
        if (half < 0 || !constant_except(ops_[static_cast<size_t>(half)], "x")) continue;
        std::vector<size_t> step = {static_cast<size_t>(both), static_cast<size_t>(ln),
                                    static_cast<size_t>(half)};
        const int gain =
            only_reader(readers, ops_[static_cast<size_t>(half)].outputs.at(0), "mul", "x");
        if (gain >= 0 && constant_except(ops_[static_cast<size_t>(gain)], "x"))
            step.push_back(static_cast<size_t>(gain));
        if (!std::is_sorted(step.begin(), step.end()) || step[0] <= a) continue;
        neg.fusion = CompiledOp::Fusion::rms_norm;
        neg.fused = step;
        for (size_t k : step) ops_[k].folded = true;
    }
}

int Function::rms_norms_planned() const {
    return static_cast<int>(std::count_if(ops_.begin(), ops_.end(), [](const CompiledOp& c) {
        return c.fusion == CompiledOp::Fusion::rms_norm;
    }));
}

// Convs or linears of palettized weights reading the same x (a layer's query,
// key and value; gate and up; an LM head's parts) run as one product where the
// first of them stands: every other input they have is a constant, so all is
// ready there.
void Function::plan_stacked_products() {
    const auto palettized = [&](const CompiledOp& c) {
        if ((c.type != "conv" && c.type != "linear") || c.folded || !c.fused.empty() ||
            single_input(c, "x") < 0 || !reads_as_matrix(c, "weight") || !constant_except(c, "x"))
            return false;
        const Slot& w = constants_[static_cast<size_t>(c.inputs.at("weight").at(0))];
        return w.weight && w.weight->palettized;
    };
    const Readers readers = readers_by_slot();
    for (size_t a = 0; a < ops_.size(); ++a) {
        CompiledOp& first = ops_[a];
        if (!palettized(first)) continue;
        const int x = first.inputs.at("x")[0];
        for (size_t k : readers[static_cast<size_t>(x)]) {
            if (k <= a || first.fused.size() + 1 >= max_fused) continue;
            CompiledOp& c = ops_[k];
            if (c.type == first.type && palettized(c) && single_input(c, "x") == x) {
                first.fusion = CompiledOp::Fusion::stacked;
                first.fused.push_back(k);
                c.folded = true;
            }
        }
    }
}

int Function::stacked_products_planned() const {
    int n = 0;
    for (const CompiledOp& c : ops_)
        if (c.fusion == CompiledOp::Fusion::stacked) n += 1 + static_cast<int>(c.fused.size());
    return n;
}

std::vector<Slot> Function::spare_slots() const {
    std::lock_guard lock(spare_mutex_);
    if (spare_slots_.empty()) return std::vector<Slot>(constants_.size());
    std::vector<Slot> slots = std::move(spare_slots_.back());
    spare_slots_.pop_back();
    return slots;
}

// A run writes inputs, states and op outputs, and empties those some op
// releases; what is left is a short list, read at the end of every run
// instead of every op's outputs (cold by then: a walk of thousands of ops).
void Function::plan_kept_slots() {
    std::vector<bool> kept(constants_.size(), false);
    for (const std::vector<int>* written : {&input_slots_, &state_slots_})
        for (int s : *written) kept[static_cast<size_t>(s)] = true;
    for (const CompiledOp& op : ops_)
        for (int s : op.outputs) kept[static_cast<size_t>(s)] = true;
    for (const CompiledOp& op : ops_)
        for (int s : op.release) kept[static_cast<size_t>(s)] = false;
    for (size_t s = 0; s < kept.size(); ++s)
        if (kept[s]) kept_slots_.push_back(static_cast<int>(s));
}

void Function::keep_spare(std::vector<Slot> slots) const {
    for (int s : kept_slots_) slots[static_cast<size_t>(s)] = Slot{};
    std::lock_guard lock(spare_mutex_);
    spare_slots_.push_back(std::move(slots));
}

std::map<std::string, Tensor> Function::run(std::map<std::string, Tensor> inputs,
                                            States& states) const {
    // What the run makes; constants are read from constants_ where a slot is empty.
    std::vector<Slot> slots = spare_slots();
    for (const auto& given : inputs)
        if (std::none_of(inputs_.begin(), inputs_.end(),
                         [&](const TensorSpec& s) { return s.name == given.first; }))
            fail("function {}: {} is not an input", name_, given.first);
    for (size_t k = 0; k < inputs_.size(); ++k) {
        const TensorSpec& spec = inputs_[k];
        auto it = inputs.find(spec.name);
        if (it == inputs.end()) fail("function {}: input {} is missing", name_, spec.name);
        Tensor& t = it->second;
        const bool floats = is_float_type(spec.dtype);
        if (!shape_fits(spec.shape, t.shape) ||
            (floats ? t.f.size() : t.i.size()) != static_cast<size_t>(t.numel()))
            fail("function {}: input {} must be {}{} with {} values", name_, spec.name,
                 coreml::mil_dtype_name(spec.dtype), shape_text(spec.shape),
                 floats ? "float" : "integer");
        Tensor in = std::move(t);
        in.dtype = spec.dtype;
        if (spec.dtype == mil::FLOAT16) round_half_values(rounding_, in.f);
        slots[static_cast<size_t>(input_slots_[k])].tensor =
            std::make_shared<Tensor>(std::move(in));
    }
    for (size_t k = 0; k < states_.size(); ++k) {
        const size_t slot = static_cast<size_t>(state_slots_[k]);
        slots[slot].state = &states.get(states_[k].name, states_[k].dtype, states_[k].shape);
    }
    const auto context = [&](const CompiledOp& op) {
        return OpContext(name_, op, slots, constants_, is_state_input_, state_views_, *pool_,
                         rounding_);
    };
    for (const CompiledOp& op : ops_) {
        if (!op.folded) {
            OpContext ctx = context(op);
            if (op.fused.empty()) {
                op.def->run(ctx);
            } else {
                const size_t n = op.fused.size() + 1;
                std::array<std::optional<OpContext>, max_fused> rest;
                std::array<OpContext*, max_fused> step{&ctx};
                for (size_t k = 1; k < n; ++k)
                    step[k] = &rest[k - 1].emplace(context(ops_[op.fused[k - 1]]));
                if (!run_fused(op.fusion, {step.data(), n}, rounding_))
                    for (size_t k = 0; k < n; ++k)
                        (k ? ops_[op.fused[k - 1]] : op).def->run(*step[k]);
            }
        }
        for (int s : op.release) slots[static_cast<size_t>(s)] = Slot{};
    }
    std::map<std::string, Tensor> out;
    for (size_t k = 0; k < outputs_.size(); ++k) {
        const int index = output_slots_[k];
        const Slot& s = run_value(slots, constants_, index);
        // A tensor the run made and holds alone is moved out (tensors in
        // slots are created non-const), unless a later output names it too.
        const bool sole = s.tensor && !slots[static_cast<size_t>(index)].empty() &&
                          s.tensor.use_count() == 1 &&
                          std::find(output_slots_.begin() + static_cast<std::ptrdiff_t>(k) + 1,
                                    output_slots_.end(), index) == output_slots_.end();
        if (sole)
            out[outputs_[k].name] = std::move(const_cast<Tensor&>(*s.tensor));
        else if (s.tensor)
            out[outputs_[k].name] = *s.tensor;
        else if (s.state)
            out[outputs_[k].name] = *s.state;
        else if (s.weight)
            out[outputs_[k].name] = weight_to_tensor(*s.weight);
        else if (s.block)
            out[outputs_[k].name] = block_to_tensor(*s.block);
        else
            fail("function {}: output {} has no value", name_, outputs_[k].name);
    }
    keep_spare(std::move(slots));
    return out;
}

}  // namespace anelm::milexec
