// The checks behind the lint rules, grouped by what they look at; lint.cpp
// runs them over every function of a package.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "analysis/lint.h"
#include "analysis/lint_program.h"

namespace anelm::lint {

// Collects the findings of one package.
struct Findings {
    std::string package;
    std::vector<LintFinding>& out;

    void add(std::string_view rule_id, const std::string& function, const std::string& op,
             std::string message);
    void add(std::string_view rule_id, LintSeverity severity, const std::string& function,
             const std::string& op, std::string message);
};

// States of a function: their count (ANE002) and dimensions (ANE001).
void check_states(const LintFunction& f, Findings& findings);
// Each op against the op rules: ANE003-ANE008, ANE011, ANE012, ANE014.
void check_ops(const LintFunction& f, Findings& findings);
// Unknown dimensions not covered by an enumerated input shape (ANE009).
void check_dynamic_shapes(const LintFunction& f, bool enumerated_input, Findings& findings);
// A norm computing the function's output (ANE013); called for non-last chunks.
void check_final_norm(const LintFunction& f, Findings& findings);
// Op count and dispatch overhead (ANE015).
void check_dispatch(const LintFunction& f, Findings& findings);

// Names that are not MIL identifiers, anywhere in the model (ANE016).
void check_names(const coreml::spec::Model& model, Findings& findings);
bool is_mil_identifier(std::string_view name);

// Ops that only move or rescale data: checks look through them to the op that
// made a value.
bool passes_through(const std::string& op_type);

// Dispatch cost per op (ane-llm-notes.txt, 'Bandwidth, SRAM, dispatch'), and
// the op count above which ANE015 warns: ANEMLL's largest recommended single
// function is a monolithic model of up to 3B ('ANEMLL conversion'), 36 layers
// for Qwen2.5-3B, which our lowering makes about 3600 ops (about 100 a layer).
inline constexpr double dispatch_ms_per_op = 0.095;
inline constexpr int64_t dispatch_warning_ops = 4000;

}  // namespace anelm::lint
