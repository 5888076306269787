#include "analysis/lint_report.h"

#include <fmt/core.h>

namespace anelm {

namespace {

std::string_view target_name(LintTarget t) {
    return t == LintTarget::ios18 ? "ios18" : "macos15";
}

struct Counts {
    int64_t errors = 0, warnings = 0, infos = 0;
};

Counts count(std::span<const LintFinding> findings) {
    Counts c;
    for (const LintFinding& f : findings) {
        if (f.severity == LintSeverity::error) ++c.errors;
        if (f.severity == LintSeverity::warning) ++c.warnings;
        if (f.severity == LintSeverity::info) ++c.infos;
    }
    return c;
}

}  // namespace

std::string lint_text(const LintReport& report) {
    std::string s;
    for (const LintFinding& f : report.findings)
        s += fmt::format("{} {} {}:{}:{}  {} (fix: {}) [fact: {}]\n",
                         lint_severity_name(f.severity), f.rule->id, f.package, f.function, f.op,
                         f.message, f.rule->fix, f.rule->fact);
    const Counts c = count(report.findings);
    s += fmt::format("{}: {} error(s), {} warning(s), {} info in {} package(s) for {}\n",
                     report.path, c.errors, c.warnings, c.infos, report.packages.size(),
                     target_name(report.target));
    return s;
}

nlohmann::ordered_json lint_json(const LintReport& report) {
    nlohmann::ordered_json j;
    j["path"] = report.path;
    j["target"] = target_name(report.target);
    j["packages"] = report.packages;
    j["findings"] = nlohmann::ordered_json::array();
    for (const LintFinding& f : report.findings) {
        nlohmann::ordered_json e;
        e["id"] = f.rule->id;
        e["severity"] = lint_severity_name(f.severity);
        e["package"] = f.package;
        e["function"] = f.function;
        e["op"] = f.op;
        e["message"] = f.message;
        e["fix"] = f.rule->fix;
        e["fact"] = f.rule->fact;
        j["findings"].push_back(std::move(e));
    }
    const Counts c = count(report.findings);
    j["summary"] = {{"errors", c.errors}, {"warnings", c.warnings}, {"info", c.infos}};
    j["exit_code"] = lint_exit_code(report.findings);
    return j;
}

}  // namespace anelm
