// ANE017: what a package, and a converted folder, wires on the Neural Engine
// once loaded, against the memory budget `anelm plan` gives the smallest device
// of the target. Core ML wires a copy of a package's weights for every function
// that is loaded (plan::ane_wired_per_function bytes per weight byte), and
// ANEMLL's runners load every function of a chunk.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "analysis/lint.h"
#include "analysis/plan_chips.h"

namespace anelm {

struct LintMemory {
    std::string package;
    uint64_t weight_bytes = 0;  // the weight file
    int functions = 0;          // functions of the program, each loaded
    double state_bytes = 0;     // the states, once: the functions share them
    // functions x plan::ane_wired_per_function x weight_bytes + state_bytes
    double loaded_bytes() const;
};

LintMemory lint_package_memory(const LintPackage& package);

// The device lint holds a target to: the chip with the smallest budget in the planner's table
// for the target's platform (macos15: M1, 8 GB; ios18: A17 Pro, 8 GB).
const plan::Chip& lint_budget_chip(LintTarget target);

// ANE017 for one package over the budget.
std::vector<LintFinding> lint_package_memory_check(const LintMemory& package, LintTarget target);
// ANE017 for several packages together (a converted folder, named `name`) over the budget.
std::vector<LintFinding> lint_total_memory_check(std::span<const LintMemory> packages,
                                                 LintTarget target, const std::string& name);

}  // namespace anelm
