// Perplexity of a text as llama.cpp's perplexity tool measures it, and how far
// a quantized model's next-token distributions land from the base model's.
#pragma once

#include <cstdint>
#include <span>

#include "base/progress.h"
#include "runtime/session.h"

namespace anelm {

struct PerplexityOptions {
    int64_t n_ctx = 512;   // tokens per window
    int64_t n_chunks = 0;  // windows to run; 0: every whole window the text holds
    int32_t bos_id = -1;   // when >= 0, each window starts with it (its first token replaced)
};

// Negative log-likelihood of the scored tokens.
struct NllStats {
    double mean = 0;           // mean NLL (nats)
    double perplexity = 0;     // exp(mean)
    double perplexity_se = 0;  // perplexity * the standard error of the mean NLL
};

struct PerplexityResult {
    int64_t n_windows = 0;
    int64_t n_scored = 0;  // tokens scored over all windows
    NllStats nll;
    // With a base session: the base's NLL, KL(base || model) per scored token
    // (mean and 99th percentile, nats) and how often both rank the same token first.
    NllStats base_nll;
    double kl_mean = 0, kl_p99 = 0;
    double top1 = 0;  // fraction of scored tokens, 0..1
};

// log(sum(exp(logits))), in double so a 150k vocabulary loses nothing.
double log_sum_exp(std::span<const float> logits);
// KL(p || q) of p = softmax(base), q = softmax(other); lse_* their log_sum_exp.
double kl_divergence(std::span<const float> base, double lse_base, std::span<const float> other,
                     double lse_other);

// Splits tokens into consecutive windows of n_ctx tokens; each runs as one
// prefill from position 0, and the second half of the window is scored: the
// logits of positions n_ctx / 2 .. n_ctx - 2 against the tokens that follow
// them, so every scored token has at least n_ctx / 2 tokens of context.
// The sessions must be built with all_logits, a context of at least n_ctx
// and a prefill batch of n_ctx; base (may be null) runs the same windows.
// progress sees windows done out of all.
PerplexityResult perplexity(Session& session, Session* base, std::span<const int32_t> tokens,
                            const PerplexityOptions& options, const ProgressFn& progress = {});

}  // namespace anelm
