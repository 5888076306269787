#include "analysis/lint_memory.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>

#include "analysis/plan_cost.h"
#include "coreml/mil_types.h"

namespace anelm {

namespace {

namespace mil = coreml::mil;

double dtype_bytes(mil::DataType t) {
    switch (t) {
        case mil::FLOAT32:
        case mil::INT32:
            return 4;
        case mil::INT8:
        case mil::UINT8:
            return 1;
        default:
            return 2;  // fp16, the states ANEMLL and anelm write
    }
}

std::string_view target_name(LintTarget t) {
    return t == LintTarget::ios18 ? "ios18" : "macos15";
}

// "over the 5.73 GB budget of the smallest macos15 device anelm plan knows (M1, 8 GB: 2/3 of
// its RAM)"
std::string budget_text(LintTarget target) {
    const plan::Chip& chip = lint_budget_chip(target);
    const double fraction = plan::memory_budget_fraction(chip);
    return fmt::format(
        "over the {:.2f} GB budget of the smallest {} device anelm plan knows ({}, {:.0f} GB: "
        "{} of its RAM)",
        plan::memory_budget_bytes(chip) / 1e9, target_name(target), chip.name, chip.ram_gib,
        fraction < 0.7 ? "2/3" : "3/4");
}

}  // namespace

double LintMemory::loaded_bytes() const {
    return functions * plan::ane_wired_per_function * static_cast<double>(weight_bytes) +
           state_bytes;
}

LintMemory lint_package_memory(const LintPackage& package) {
    LintMemory m;
    m.package = package.name;
    m.weight_bytes = package.weight_file_bytes;
    if (package.model == nullptr) return m;
    const auto& functions = package.model->mlprogram().functions();
    m.functions = std::max(1, static_cast<int>(functions.size()));
    std::map<std::string, double> states;  // by name: functions share them
    for (const auto& [name, fn] : functions)
        for (const mil::NamedValueType& in : fn.inputs()) {
            if (!in.type().has_statetype()) continue;
            const mil::ValueType& wrapped = in.type().statetype().wrappedtype();
            if (!wrapped.has_tensortype()) continue;
            double n = dtype_bytes(wrapped.tensortype().datatype());
            for (int64_t d : coreml::tensor_shape(wrapped.tensortype()))
                n *= std::max<int64_t>(d, 0);
            states[in.name()] = std::max(states[in.name()], n);
        }
    for (const auto& [name, bytes] : states) m.state_bytes += bytes;
    return m;
}

const plan::Chip& lint_budget_chip(LintTarget target) {
    return plan::smallest_budget_chip(target == LintTarget::ios18 ? plan::Platform::iphone
                                                                  : plan::Platform::mac);
}

std::vector<LintFinding> lint_package_memory_check(const LintMemory& package, LintTarget target) {
    const double budget = plan::memory_budget_bytes(lint_budget_chip(target));
    if (package.loaded_bytes() <= budget) return {};
    LintFinding f;
    f.rule = &lint_rule("ANE017");
    f.severity = f.rule->severity;
    f.package = package.package;
    f.message = fmt::format(
        "{} function(s) x {:.2f} x {:.2f} GB of weights + {:.2f} GB of state = {:.2f} GB wired "
        "once loaded, {}",
        package.functions, plan::ane_wired_per_function, package.weight_bytes / 1e9,
        package.state_bytes / 1e9, package.loaded_bytes() / 1e9, budget_text(target));
    return {f};
}

std::vector<LintFinding> lint_total_memory_check(std::span<const LintMemory> packages,
                                                 LintTarget target, const std::string& name) {
    if (packages.size() < 2) return {};
    double loaded = 0, weights = 0;
    for (const LintMemory& m : packages) {
        loaded += m.loaded_bytes();
        weights += static_cast<double>(m.weight_bytes);
    }
    if (loaded <= plan::memory_budget_bytes(lint_budget_chip(target))) return {};
    LintFinding f;
    f.rule = &lint_rule("ANE017");
    f.severity = f.rule->severity;
    f.package = name;
    f.message = fmt::format(
        "{} packages ({:.2f} GB of weights) wire {:.2f} GB together once every function is "
        "loaded, {}",
        packages.size(), weights / 1e9, loaded / 1e9, budget_text(target));
    return {f};
}

}  // namespace anelm
