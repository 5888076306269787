// ANE016: every name a Core ML loader resolves (functions, inputs, states,
// outputs, op outputs and op names) must be a MIL identifier,
// [A-Za-z_][A-Za-z0-9_@]* (MIL.proto).
#include <set>

#include <fmt/core.h>

#include "analysis/lint_checks.h"

namespace anelm::lint {

namespace {

namespace spec = coreml::spec;

bool identifier_start(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

// Each name is reported once per function, however often it appears.
class NameCheck {
public:
    NameCheck(Findings& findings, std::string function)
        : findings_(findings), function_(std::move(function)) {}

    void operator()(const std::string& name, std::string_view what) {
        if (is_mil_identifier(name) || !reported_.insert(name).second) return;
        findings_.add("ANE016", function_, name,
                      fmt::format("{} '{}' is not a MIL identifier", what, name));
    }

private:
    Findings& findings_;
    std::string function_;
    std::set<std::string> reported_;
};

void check_features(const google::protobuf::RepeatedPtrField<spec::FeatureDescription>& features,
                    std::string_view what, NameCheck& check) {
    for (const spec::FeatureDescription& f : features) check(f.name(), what);
}

}  // namespace

bool is_mil_identifier(std::string_view name) {
    if (name.empty() || !identifier_start(name[0])) return false;
    for (char c : name.substr(1))
        if (!identifier_start(c) && !(c >= '0' && c <= '9') && c != '@') return false;
    return true;
}

void check_names(const spec::Model& model, Findings& findings) {
    const spec::ModelDescription& d = model.description();
    NameCheck described(findings, "");
    check_features(d.input(), "input", described);
    check_features(d.output(), "output", described);
    check_features(d.state(), "state", described);
    for (const spec::FunctionDescription& fd : d.functions()) {
        NameCheck check(findings, fd.name());
        check(fd.name(), "function");
        check_features(fd.input(), "input", check);
        check_features(fd.output(), "output", check);
        check_features(fd.state(), "state", check);
    }
    for (const auto& [name, fn] : model.mlprogram().functions()) {
        NameCheck check(findings, name);
        check(name, "function");
        for (const mil::NamedValueType& in : fn.inputs())
            check(in.name(), in.type().has_statetype() ? "state" : "input");
        for (const auto& [opset, block] : fn.block_specializations()) {
            for (const mil::Operation& op : block.operations()) {
                for (const mil::NamedValueType& out : op.outputs()) check(out.name(), "op output");
                const auto it = op.attributes().find("name");
                if (it != op.attributes().end() && it->second.has_immediatevalue() &&
                    it->second.immediatevalue().tensor().strings().values_size() == 1)
                    check(it->second.immediatevalue().tensor().strings().values(0), "op name");
            }
            for (const std::string& out : block.outputs()) check(out, "function output");
        }
    }
}

}  // namespace anelm::lint
