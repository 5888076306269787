// The rules about a function as a whole: its states, its shapes, what its
// output is, and how many ops it dispatches.
#include <algorithm>
#include <set>

#include <fmt/core.h>

#include "analysis/lint_checks.h"

namespace anelm::lint {

namespace {

bool power_of_two(int64_t d) {
    return d > 0 && (d & (d - 1)) == 0;
}

bool is_norm(const std::string& op_type) {
    static const std::set<std::string> norms{"layer_norm", "rms_norm", "batch_norm",
                                             "instance_norm", "l2_norm"};
    return norms.contains(op_type);
}

std::string dims_text(const std::vector<int64_t>& dims) {
    std::string s;
    for (int64_t d : dims) s += (s.empty() ? "" : ", ") + std::to_string(d);
    return "[" + s + "]";
}

}  // namespace

void Findings::add(std::string_view rule_id, const std::string& function, const std::string& op,
                   std::string message) {
    add(rule_id, lint_rule(rule_id).severity, function, op, std::move(message));
}

void Findings::add(std::string_view rule_id, LintSeverity severity, const std::string& function,
                   const std::string& op, std::string message) {
    out.push_back({&lint_rule(rule_id), severity, package, function, op, std::move(message)});
}

void check_states(const LintFunction& f, Findings& out) {
    std::vector<std::string> states;
    for (const mil::NamedValueType& in : f.function().inputs()) {
        if (!in.type().has_statetype()) continue;
        states.push_back(in.name());
        const mil::ValueType& wrapped = in.type().statetype().wrappedtype();
        if (!wrapped.has_tensortype()) continue;
        const auto dims = coreml::tensor_shape(wrapped.tensortype());
        // The first dimension counts cache slots (2 n_layer once K and V are
        // concatenated, 56 for a 28-layer model) and compiles at any size.
        for (size_t i = 1; i < dims.size(); ++i)
            if (!power_of_two(dims[i]) && dims[i] % 32 != 0) {
                out.add("ANE001", f.name(), in.name(),
                        fmt::format("state {} has dimension {} of {}, neither a power of two "
                                    "nor a multiple of 32",
                                    dims_text(dims), i, dims[i]));
                break;
            }
    }
    if (states.size() > 1) {
        std::string names;
        for (const std::string& s : states) names += (names.empty() ? "" : ", ") + s;
        out.add("ANE002", f.name(), states[1],
                fmt::format("{} states ({}); one at most", states.size(), names));
    }
}

void check_dynamic_shapes(const LintFunction& f, bool enumerated_input, Findings& out) {
    for (const mil::NamedValueType& in : f.function().inputs()) {
        if (!in.type().has_tensortype()) continue;
        const mil::TensorType& t = in.type().tensortype();
        if (t.datatype() == mil::INT64)
            out.add("ANE008", f.name(), in.name(), "function input is int64");
    }
    for (const mil::NamedValueType& in : f.function().inputs()) {
        if (!in.type().has_tensortype() || enumerated_input) continue;
        const auto dims = coreml::tensor_shape(in.type().tensortype());
        if (in.type().tensortype().rank() < 0 ||
            std::find(dims.begin(), dims.end(), -1) != dims.end())
            out.add("ANE009", f.name(), in.name(),
                    fmt::format("input {} has unknown dimensions and no enumerated shapes",
                                dims_text(dims)));
    }
    if (enumerated_input) return;  // unknown dims downstream follow the enumerated input
    int64_t n_dynamic = 0;
    std::string first;
    for (const mil::Operation& op : f.block().operations())
        for (const mil::NamedValueType& o : op.outputs()) {
            if (!o.type().has_tensortype()) continue;
            const auto dims = coreml::tensor_shape(o.type().tensortype());
            if (o.type().tensortype().rank() < 0 ||
                std::find(dims.begin(), dims.end(), -1) != dims.end()) {
                if (n_dynamic++ == 0) first = lint_op_name(op);
                break;
            }
        }
    if (n_dynamic > 0)
        out.add("ANE009", f.name(), first,
                fmt::format("{} op(s) have outputs of unknown shape, this one first", n_dynamic));
}

void check_final_norm(const LintFunction& f, Findings& out) {
    for (const std::string& output : f.block().outputs()) {
        std::string value = output;
        for (;;) {
            const mil::Operation* op = f.producer(value);
            if (op == nullptr) break;
            if (is_norm(op->type())) {
                out.add("ANE013", f.name(), lint_op_name(*op),
                        fmt::format("output {} is normalized by {} in a chunk before the last",
                                    output, op->type()));
                break;
            }
            if (!passes_through(op->type())) break;
            const auto x = LintFunction::input_names(*op, "x");
            if (x.empty()) break;
            value = x[0];
        }
    }
}

void check_dispatch(const LintFunction& f, Findings& out) {
    int64_t n = 0;
    for (const mil::Operation& op : f.block().operations())
        if (op.type() != "const" && !op.type().starts_with("constexpr_")) ++n;
    const double ms = static_cast<double>(n) * dispatch_ms_per_op;
    const bool many = n > dispatch_warning_ops;
    out.add(
        "ANE015", many ? LintSeverity::warning : LintSeverity::info, f.name(), "",
        fmt::format("{} ops: {:.1f} ms of dispatch per call if each is dispatched alone{}", n, ms,
                    many ? fmt::format(" (over {}: more than the largest single function "
                                       "reported to work, a monolithic 3B model)",
                                       dispatch_warning_ops)
                         : ""));
}

}  // namespace anelm::lint
