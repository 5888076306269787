// anelm lint: the Neural Engine's rules checked on Core ML packages before a
// Mac compiles them. Each rule rests on a published observation (the fact it
// cites); a finding names the package, function and op it points at as they
// are spelled in the program, and how to fix it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coreml/blob_table.h"
#include "coreml/package.h"

namespace anelm {

// error: rejected, wrong results, or off the ANE; warning: likely trouble;
// info: a measurement to read.
enum class LintSeverity { error, warning, info };
std::string_view lint_severity_name(LintSeverity severity);

struct LintRule {
    std::string_view id;  // ANE001
    LintSeverity severity;
    std::string_view title;  // what it checks
    std::string_view fix;
    std::string_view fact;  // the source it rests on: file and topic
};

// Every rule, in id order.
std::span<const LintRule> lint_rules();
const LintRule& lint_rule(std::string_view id);

struct LintFinding {
    const LintRule* rule = nullptr;
    LintSeverity severity = LintSeverity::info;  // the rule's, unless a check raises it
    std::string package;   // its file name, or its role when lowered in memory
    std::string function;  // empty for the package as a whole
    std::string op;        // op or value name as in the program; empty for a function
    std::string message;
};

enum class LintTarget { macos15, ios18 };
LintTarget parse_lint_target(const std::string& text);  // "macos15" or "ios18"

// One package to check: its program, where its blobs are, the size of its
// weight file, and its place among a converted directory's chunks (0 when it
// is not a chunk or unknown; the metadata ANEMLL writes is read then).
struct LintPackage {
    std::string name;
    const coreml::spec::Model* model = nullptr;
    const coreml::BlobTable* blobs = nullptr;
    uint64_t weight_file_bytes = 0;
    int chunk_no = 0, n_chunks = 0;  // 1-based
};

std::vector<LintFinding> lint_package(const LintPackage& package, LintTarget target);

// Exit status of `anelm lint`: 1 with any error, 3 with warnings only, else 0.
int lint_exit_code(std::span<const LintFinding> findings);

}  // namespace anelm
