// A context longer than the model was trained on: positions past the trained
// length were never seen in training, so convert warns, lint reports ANE019 and
// plan says so. The trained length is config.json's max_position_embeddings,
// a GGUF's context_length or a llama2.c checkpoint's seq_len (ModelSpec::n_ctx_train).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/lint.h"

namespace anelm {

// "100000 is past the model's trained length 2048: ...", what happens past it, for a caller to
// name the number ("--ctx 100000 is ..."); empty when n_ctx is at or below n_ctx_train, or
// n_ctx_train is unknown (0).
std::string past_trained_context(int64_t n_ctx, int64_t n_ctx_train);

// ANE019 for packages of n_ctx positions made from a model trained on n_ctx_train, named
// `package` (a converted folder's meta.yaml, or the model linted as convert would write it);
// nothing at or below the trained length.
std::vector<LintFinding> lint_trained_context(int64_t n_ctx, int64_t n_ctx_train,
                                              const std::string& package);

}  // namespace anelm
