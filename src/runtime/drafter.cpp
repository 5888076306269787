#include "runtime/drafter.h"

#include <algorithm>

#include "base/error.h"

namespace anelm {

LookupDrafter::LookupDrafter(int max_ngram) : max_ngram_(max_ngram) {
    if (max_ngram < 1) fail("--lookup: n-grams of {} tokens, expected at least 1", max_ngram);
}

std::vector<int32_t> LookupDrafter::draft(std::span<const int32_t> history, int64_t max_tokens) {
    const auto n = static_cast<int64_t>(history.size());
    if (max_tokens <= 0) return {};
    for (int64_t m = std::min<int64_t>(max_ngram_, n - 1); m >= 1; --m) {
        const auto key = history.subspan(static_cast<size_t>(n - m));
        // The latest earlier start whose m tokens equal the key and that has a continuation.
        for (int64_t s = n - m - 1; s >= 0; --s) {
            if (!std::equal(key.begin(), key.end(), history.begin() + s)) continue;
            // What followed the match; where that runs into the sequence's end,
            // the same stretch again (the sequence repeats with that period).
            const int64_t from = s + m;
            const int64_t period = n - from;
            std::vector<int32_t> tokens(static_cast<size_t>(max_tokens));
            for (int64_t j = 0; j < max_tokens; ++j)
                tokens[static_cast<size_t>(j)] = history[static_cast<size_t>(from + j % period)];
            return tokens;
        }
    }
    return {};
}

ModelDrafter::ModelDrafter(TokenModel& model) : model_(model) {
    if (!model.can_rewind(0)) fail("a draft model must be able to move back in its cache");
}

std::vector<int32_t> ModelDrafter::draft(std::span<const int32_t> history, int64_t max_tokens) {
    const auto n = static_cast<int64_t>(history.size());
    max_tokens = std::min(max_tokens, model_.n_ctx() - n + 1);
    if (max_tokens <= 0 || history.empty()) return {};
    // Keep what the cache shares with the history, less at least one token to
    // feed (its logits are the first draft's).
    const auto shared = std::mismatch(fed_.begin(), fed_.end(), history.begin(), history.end());
    auto keep = std::min<int64_t>(shared.first - fed_.begin(), n - 1);
    if (!model_.can_rewind(keep)) keep = 0;  // a recurrent state too far back: start over
    model_.rewind(keep);
    fed_.assign(history.begin(), history.end());
    std::span<const float> logits = model_.prefill(history.subspan(static_cast<size_t>(keep)));
    std::vector<int32_t> tokens;
    while (true) {
        const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
        tokens.push_back(static_cast<int32_t>(best));
        if (static_cast<int64_t>(tokens.size()) == max_tokens) return tokens;
        logits = model_.decode(tokens.back());
        fed_.push_back(tokens.back());
    }
}

}  // namespace anelm
