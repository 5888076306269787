// What `anelm lint` prints: one line per finding and a summary, or JSON
// (the schema is in docs/lint.md).
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "analysis/lint.h"
#include "analysis/lint_memory.h"

namespace anelm {

struct LintReport {
    std::string path;
    LintTarget target = LintTarget::macos15;
    std::vector<std::string> packages;  // what was checked, in order
    std::vector<LintFinding> findings;
    std::vector<LintMemory> memory;  // per package, for ANE017 over them all
};

// "error ANE004 pkg:main:gelu_0  message (fix: ...) [fact: ...]" lines, then a summary line.
std::string lint_text(const LintReport& report);
nlohmann::ordered_json lint_json(const LintReport& report);

}  // namespace anelm
