#include "analysis/trained_context.h"

#include <fmt/core.h>

namespace anelm {

std::string past_trained_context(int64_t n_ctx, int64_t n_ctx_train) {
    if (n_ctx_train <= 0 || n_ctx <= n_ctx_train) return {};
    return fmt::format(
        "{} is past the model's trained length {}: positions past it were never trained, so "
        "attention there extrapolates its position encoding and the output degrades",
        n_ctx, n_ctx_train);
}

std::vector<LintFinding> lint_trained_context(int64_t n_ctx, int64_t n_ctx_train,
                                              const std::string& package) {
    const std::string message = past_trained_context(n_ctx, n_ctx_train);
    if (message.empty()) return {};
    LintFinding f;
    f.rule = &lint_rule("ANE019");
    f.severity = f.rule->severity;
    f.package = package;
    f.message = "context " + message;
    return {f};
}

}  // namespace anelm
