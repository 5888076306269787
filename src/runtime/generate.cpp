#include "runtime/generate.h"

#include <algorithm>
#include <chrono>

#include "base/error.h"

namespace anelm {

namespace {

// The loop after the first token, with drafts: `next` was emitted and is not
// yet fed. Each verify pass feeds next and the drafts; row i is what the plain
// loop would have sampled from after feeding next and the first i drafts, so
// rows are taken while the drafts agree with them, and the model moves back to
// just after the last token it kept.
void speculate(TokenModel& model, int64_t limit, const GenerateOptions& options,
               GenerateStats& stats, const std::vector<int32_t>& history, const int32_t& next,
               const std::function<bool(std::span<const float>)>& take) {
    int64_t draft_n = options.draft_n;
    while (model.pos() < limit) {
        const int64_t pos = model.pos();
        int64_t room = std::min({draft_n, model.verify_tokens() - 1, limit - pos - 1});
        if (!model.can_verify(room + 1)) room = 0;
        std::vector<int32_t> tokens{next};
        if (room > 0) {
            const std::vector<int32_t> drafts = options.drafter->draft(history, room);
            tokens.insert(tokens.end(), drafts.begin(), drafts.end());
        }
        if (tokens.size() == 1) {
            if (!take(model.decode(next))) return;
            continue;
        }
        const std::span<const float> rows = model.verify(tokens);
        const size_t n_vocab = rows.size() / tokens.size();
        ++stats.n_verify;
        stats.n_drafted += static_cast<int64_t>(tokens.size()) - 1;
        for (size_t i = 0;; ++i) {
            const bool stopped = !take(rows.subspan(i * n_vocab, n_vocab));
            const int64_t fed = pos + 1 + static_cast<int64_t>(i);
            if (stopped) return model.rewind(fed);
            if (i + 1 == tokens.size() || next != tokens[i + 1] || fed >= limit) {
                model.rewind(fed);
                if (options.adaptive_draft)
                    draft_n = i + 1 == tokens.size() ? std::min(draft_n + 2, options.draft_n)
                                                     : std::max<int64_t>(draft_n - 1, 1);
                break;
            }
            ++stats.n_accepted;
        }
    }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

GenerateStats generate(TokenModel& model, std::span<const int32_t> prompt,
                       const GenerateOptions& options,
                       const std::function<void(int32_t token)>& on_token) {
    if (prompt.empty()) fail("the prompt has no tokens");
    if (model.pos() + static_cast<int64_t>(prompt.size()) > model.n_ctx())
        fail("the prompt has {} tokens but the context holds {}", model.pos() + prompt.size(),
             model.n_ctx());

    if (options.drafter != nullptr) {
        if (model.verify_tokens() < 2) fail("this model cannot verify drafted tokens");
        if (options.draft_n < 1) fail("--draft-n: {}, expected at least 1", options.draft_n);
    }
    GenerateStats stats;
    stats.n_prompt = static_cast<int64_t>(prompt.size());
    Sampler sampler(options.sampler);
    std::vector<int32_t> history(options.context.begin(), options.context.end());
    history.insert(history.end(), prompt.begin(), prompt.end());

    auto start = std::chrono::steady_clock::now();
    std::span<const float> logits = model.prefill(prompt);
    stats.prompt_seconds = seconds_since(start);
    if (options.max_new_tokens == 0) return stats;

    // The last position fed back: the token sampled after it is still emitted.
    int64_t limit = model.n_ctx();
    if (options.max_steps >= 0) limit = std::min(limit, options.max_steps);
    if (options.max_new_tokens > 0) limit = std::min(limit, model.pos() + options.max_new_tokens - 1);

    start = std::chrono::steady_clock::now();
    // Samples the next token from one row of logits: false at a stop token.
    int32_t next = 0;
    const auto take = [&](std::span<const float> row) {
        next = sampler.sample(row, history);
        if (std::find(options.stop_ids.begin(), options.stop_ids.end(), next) !=
            options.stop_ids.end())
            return false;
        history.push_back(next);
        ++stats.n_generated;
        on_token(next);
        return true;
    };
    // Like run.c: the token sampled after the forward pass at the last allowed
    // position is still emitted, but not fed back.
    if (take(logits)) {
        if (options.drafter == nullptr) {
            while (model.pos() < limit && take(model.decode(next))) {
            }
        } else {
            speculate(model, limit, options, stats, history, next, take);
        }
    }
    stats.generate_seconds = seconds_since(start);
    return stats;
}

}  // namespace anelm
