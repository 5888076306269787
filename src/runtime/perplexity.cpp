#include "runtime/perplexity.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/error.h"

namespace anelm {

double log_sum_exp(std::span<const float> logits) {
    const float top = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (float x : logits) sum += std::exp(static_cast<double>(x) - top);
    return top + std::log(sum);
}

double kl_divergence(std::span<const float> base, double lse_base, std::span<const float> other,
                     double lse_other) {
    double kl = 0;
    for (size_t i = 0; i < base.size(); ++i) {
        const double log_p = base[i] - lse_base;
        kl += std::exp(log_p) * (log_p - (other[i] - lse_other));
    }
    return std::max(kl, 0.0);  // rounding can leave a tiny negative for equal distributions
}

namespace {

int64_t argmax(std::span<const float> v) {
    return std::max_element(v.begin(), v.end()) - v.begin();
}

// Sums of NLL and NLL² over the scored tokens.
struct NllSums {
    double sum = 0, sum_sq = 0;

    void add(double nll) {
        sum += nll;
        sum_sq += nll * nll;
    }
    // The standard error as llama.cpp reports it: sqrt(variance / (n - 1)).
    NllStats stats(int64_t n) const {
        NllStats s;
        s.mean = sum / static_cast<double>(n);
        s.perplexity = std::exp(s.mean);
        const double var = std::max(sum_sq / static_cast<double>(n) - s.mean * s.mean, 0.0);
        s.perplexity_se = n > 1 ? s.perplexity * std::sqrt(var / static_cast<double>(n - 1)) : 0;
        return s;
    }
};

std::span<const float> run_window(Session& session, std::span<const int32_t> window,
                                  int64_t n_vocab) {
    session.reset();
    const std::span<const float> logits = session.prefill(window);
    if (static_cast<int64_t>(logits.size()) != static_cast<int64_t>(window.size()) * n_vocab)
        fail(
            "perplexity: the session returns {} logits for {} tokens; it must be built with "
            "all_logits",
            logits.size(), window.size());
    return logits;
}

}  // namespace

PerplexityResult perplexity(Session& session, Session* base, std::span<const int32_t> tokens,
                            const PerplexityOptions& options, const ProgressFn& progress) {
    const int64_t n_ctx = options.n_ctx;
    if (n_ctx < 4) fail("perplexity: windows of {} tokens score nothing (at least 4)", n_ctx);
    for (const Session* s : {&session, base})
        if (s && s->n_ctx() < n_ctx)
            fail("perplexity: windows of {} tokens exceed the context of {}", n_ctx, s->n_ctx());
    if (base && base->n_vocab() != session.n_vocab())
        fail("perplexity: the base model has {} tokens, the model {}", base->n_vocab(),
             session.n_vocab());
    const auto n_tokens = static_cast<int64_t>(tokens.size());
    int64_t n_windows = n_tokens / n_ctx;
    if (n_windows == 0)
        fail("perplexity: {} tokens are fewer than one window of {}", n_tokens, n_ctx);
    if (options.n_chunks > 0) n_windows = std::min(n_windows, options.n_chunks);

    const int64_t n_vocab = session.n_vocab();
    const int64_t first = n_ctx / 2;
    NllSums nll, base_nll;
    std::vector<double> kl;
    int64_t agree = 0;
    std::vector<int32_t> window(static_cast<size_t>(n_ctx));
    if (progress) progress(0, n_windows);
    for (int64_t w = 0; w < n_windows; ++w) {
        std::copy_n(tokens.begin() + w * n_ctx, n_ctx, window.begin());
        if (options.bos_id >= 0) window[0] = options.bos_id;
        const std::span<const float> logits = run_window(session, window, n_vocab);
        const std::span<const float> base_logits =
            base ? run_window(*base, window, n_vocab) : std::span<const float>{};
        for (int64_t j = first; j < n_ctx - 1; ++j) {
            const int32_t next = window[static_cast<size_t>(j + 1)];
            const auto row = logits.subspan(static_cast<size_t>(j * n_vocab), n_vocab);
            const double lse = log_sum_exp(row);
            nll.add(lse - row[static_cast<size_t>(next)]);
            if (!base) continue;
            const auto base_row = base_logits.subspan(static_cast<size_t>(j * n_vocab), n_vocab);
            const double base_lse = log_sum_exp(base_row);
            base_nll.add(base_lse - base_row[static_cast<size_t>(next)]);
            kl.push_back(kl_divergence(base_row, base_lse, row, lse));
            agree += argmax(row) == argmax(base_row);
        }
        if (progress) progress(w + 1, n_windows);
    }

    PerplexityResult r;
    r.n_windows = n_windows;
    r.n_scored = n_windows * (n_ctx - 1 - first);
    r.nll = nll.stats(r.n_scored);
    if (base) {
        r.base_nll = base_nll.stats(r.n_scored);
        double sum = 0;
        for (double k : kl) sum += k;
        r.kl_mean = sum / static_cast<double>(kl.size());
        // Nearest rank: the smallest value at or above 99% of the scored tokens.
        const auto rank = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(kl.size()))) - 1;
        std::nth_element(kl.begin(), kl.begin() + static_cast<std::ptrdiff_t>(rank), kl.end());
        r.kl_p99 = kl[rank];
        r.top1 = static_cast<double>(agree) / static_cast<double>(r.n_scored);
    }
    return r;
}

}  // namespace anelm
