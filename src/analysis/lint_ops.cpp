// The rules about single ops: what the ANE rejects, computes wrongly, or
// leaves to another unit.
#include <cmath>
#include <set>

#include <fmt/core.h>

#include "analysis/lint_checks.h"

namespace anelm::lint {

namespace {

constexpr int64_t channel_limit = 32768;
// fp16's lowest finite value: a mask at or below it overflows to -inf in fp16.
constexpr float fp16_lowest = -65504.0f;

const mil::TensorType* input_type(const LintFunction& f, const mil::Operation& op,
                                  const std::string& key) {
    const auto it = op.inputs().find(key);
    if (it == op.inputs().end() || it->second.arguments_size() == 0) return nullptr;
    const auto& b = it->second.arguments(0);
    if (b.has_name()) return f.tensor_type(b.name());
    if (b.has_value() && b.value().type().has_tensortype()) return &b.value().type().tensortype();
    return nullptr;
}

std::string shape_text(const mil::TensorType& t) {
    std::string s;
    for (int64_t d : coreml::tensor_shape(t)) s += (s.empty() ? "" : ", ") + std::to_string(d);
    return "[" + s + "]";
}

// The op that made `value`, looking through ops that only move data.
const mil::Operation* source_op(const LintFunction& f, std::string value) {
    for (;;) {
        const mil::Operation* op = f.producer(value);
        if (op == nullptr || !passes_through(op->type())) return op;
        const auto names = LintFunction::input_names(*op, "x");
        if (names.empty()) return op;
        value = names[0];
    }
}

bool reaches_state_write(const LintFunction& f, const std::string& value, int depth = 0) {
    if (depth > 16) return false;
    for (const mil::Operation* c : f.consumers(value)) {
        if (c->type() == "write_state" || c->type() == "coreml_update_state") return true;
        if ((passes_through(c->type()) || c->type() == "slice_update") && c->outputs_size() > 0 &&
            reaches_state_write(f, c->outputs(0).name(), depth + 1))
            return true;
    }
    return false;
}

void check_blockwise(const LintFunction& f, const mil::Operation& op, Findings& out) {
    const mil::TensorType* data = input_type(f, op, "data");
    const mil::TensorType* scale = input_type(f, op, "scale");
    if (data == nullptr || scale == nullptr) return;
    const auto d = coreml::tensor_shape(*data);
    const auto s = coreml::tensor_shape(*scale);
    if (d.size() != s.size()) return;
    // Axis 0 holds output channels; a scale varying along any other axis
    // splits the input dimension into blocks.
    for (size_t i = 1; i < d.size(); ++i) {
        if (s[i] > 1 && d[i] > 0) {
            out.add("ANE003", f.name(), lint_op_name(op),
                    fmt::format("scale {} on data {}: blocks of {} along axis {} of {}",
                                shape_text(*scale), shape_text(*data), d[i] / s[i], i, d[i]));
            return;
        }
    }
}

void check_concat(const LintFunction& f, const mil::Operation& op, Findings& out) {
    const std::string name = lint_op_name(op);
    if (op.outputs_size() > 0) {
        const mil::TensorType* t = f.tensor_type(op.outputs(0).name());
        if (t != nullptr)
            for (int64_t d : coreml::tensor_shape(*t))
                if (d >= channel_limit) {
                    out.add("ANE006", f.name(), name,
                            fmt::format("output {} has an axis of {} (limit {})", shape_text(*t), d,
                                        channel_limit - 1));
                    return;
                }
    }
    bool reads_state = false;
    for (const std::string& v : LintFunction::input_names(op, "values")) {
        const mil::Operation* src = source_op(f, v);
        if (src != nullptr && src->type() == "read_state") reads_state = true;
    }
    if (reads_state && op.outputs_size() > 0 && reaches_state_write(f, op.outputs(0).name()))
        out.add("ANE006", f.name(), name,
                "shifts a state: concatenates what read_state returned and writes it back");
}

void check_conv(const LintFunction& f, const mil::Operation& op, Findings& out) {
    const mil::TensorType* x = input_type(f, op, "x");
    const mil::TensorType* w = input_type(f, op, "weight");
    int64_t cin = 0, cout = 0;
    if (x != nullptr && coreml::tensor_shape(*x).size() > 1) cin = coreml::tensor_shape(*x)[1];
    if (w != nullptr && !coreml::tensor_shape(*w).empty()) cout = coreml::tensor_shape(*w)[0];
    if (cin >= channel_limit || cout >= channel_limit)
        out.add("ANE007", f.name(), lint_op_name(op),
                fmt::format("{} input and {} output channels (limit {})", cin, cout,
                            channel_limit - 1));
    // Depthwise: one input channel per group, so the weight's second dimension is 1.
    if (w == nullptr || cin <= 1 || coreml::tensor_shape(*w).size() < 2 ||
        coreml::tensor_shape(*w)[1] != 1)
        return;
    const auto weight = LintFunction::input_names(op, "weight");
    const mil::Operation* src = weight.empty() ? nullptr : source_op(f, weight[0]);
    if (src != nullptr && src->type().starts_with("constexpr_"))
        out.add("ANE018", f.name(), lint_op_name(op),
                fmt::format("depthwise conv of {} channels reads {} ({})", cin, lint_op_name(*src),
                            src->type()));
}

bool non_negative(const LintFunction& f, const std::string& value) {
    static const std::set<std::string> always{
        "abs",   "exp",      "relu",   "sigmoid",           "softmax",       "sqrt",
        "rsqrt", "softplus", "square", "reduce_sum_square", "reduce_l2_norm"};
    const mil::Operation* op = f.producer(value);
    if (op == nullptr) return false;
    if (always.contains(op->type())) return true;
    if (op->type() == "mul") {  // x * x
        const auto x = LintFunction::input_names(*op, "x");
        const auto y = LintFunction::input_names(*op, "y");
        return !x.empty() && x == y;
    }
    if (op->type() == "clip") {  // clipped below at alpha >= 0
        const auto alpha = LintFunction::input_names(*op, "alpha");
        return !alpha.empty() && non_negative(f, alpha[0]);
    }
    if (op->type() == "const") {
        const auto v = f.const_floats_of(value);
        if (!v) return false;
        for (float e : *v)
            if (!(e >= 0)) return false;
        return true;
    }
    return false;
}

void check_pow(const LintFunction& f, const mil::Operation& op, Findings& out) {
    const auto x = LintFunction::input_names(op, "x");
    if (x.empty() || non_negative(f, x[0])) return;
    const mil::Operation* src = f.producer(x[0]);
    out.add("ANE011", f.name(), lint_op_name(op),
            fmt::format("x comes from {} and may be negative",
                        src ? fmt::format("{} {}", src->type(), lint_op_name(*src))
                            : "function input " + x[0]));
}

void check_mask_const(const LintFunction& f, const mil::Operation& op, Findings& out) {
    if (op.outputs_size() == 0) return;
    const std::string& value = op.outputs(0).name();
    bool masks = false;
    for (const mil::Operation* c : f.consumers(value))
        if (c->type() == "add" || c->type() == "sub" || c->type() == "select") masks = true;
    if (!masks) return;
    const auto v = f.const_floats_of(value);
    if (!v) return;
    for (float e : *v)
        if (std::isfinite(e) && e <= fp16_lowest) {
            out.add("ANE012", f.name(), lint_op_name(op),
                    fmt::format("holds {:g}, which is -inf in fp16; a fully masked row becomes "
                                "NaN",
                                e));
            return;
        }
}

void check_gather(const LintFunction& f, const mil::Operation& op, Findings& out) {
    const auto x = LintFunction::input_names(op, "x");
    if (x.empty()) return;
    const mil::Operation* src = source_op(f, x[0]);
    if (src != nullptr && src->type() == "constexpr_lut_to_dense")
        out.add("ANE014", f.name(), lint_op_name(op),
                fmt::format("gathers rows of {}, a LUT-palettized table", lint_op_name(*src)));
}

void check_int64(const LintFunction& f, const mil::Operation& op, Findings& out) {
    for (const mil::NamedValueType& o : op.outputs())
        if (o.type().has_tensortype() && o.type().tensortype().datatype() == mil::INT64) {
            out.add("ANE008", f.name(), lint_op_name(op),
                    fmt::format("output {} is int64", o.name()));
            return;
        }
}

}  // namespace

bool passes_through(const std::string& op_type) {
    static const std::set<std::string> ops{
        "reshape",       "transpose", "squeeze", "expand_dims", "slice_by_index",
        "slice_by_size", "cast",      "mul",     "real_div"};
    return ops.contains(op_type);
}

void check_ops(const LintFunction& f, Findings& out) {
    for (const mil::Operation& op : f.block().operations()) {
        const std::string& type = op.type();
        check_int64(f, op, out);
        if (type == "constexpr_blockwise_shift_scale") check_blockwise(f, op, out);
        if (type == "gelu") out.add("ANE004", f.name(), lint_op_name(op), "gelu is not an ANE op");
        if (type == "scaled_dot_product_attention" && op.inputs().contains("attn_mask"))
            out.add("ANE005", f.name(), lint_op_name(op),
                    "the attention mask would be ignored on the ANE");
        if (type == "concat") check_concat(f, op, out);
        if (type == "conv") check_conv(f, op, out);
        if (type == "pow") check_pow(f, op, out);
        if (type == "const") check_mask_const(f, op, out);
        if (type == "gather") check_gather(f, op, out);
    }
}

}  // namespace anelm::lint
