#include "runtime/generate.h"

#include <algorithm>
#include <chrono>

#include "base/error.h"

namespace anelm {

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

GenerateStats generate(TokenModel& model, std::span<const int32_t> prompt,
                       const GenerateOptions& options,
                       const std::function<void(int32_t token)>& on_token) {
    if (prompt.empty()) fail("the prompt has no tokens");
    const int64_t limit = std::min(options.max_tokens, model.n_ctx());
    if (static_cast<int64_t>(prompt.size()) > model.n_ctx())
        fail("the prompt has {} tokens but the context holds {} (raise --ctx)", prompt.size(),
             model.n_ctx());

    GenerateStats stats;
    stats.n_prompt = static_cast<int64_t>(prompt.size());
    Sampler sampler(options.sampler);
    std::vector<int32_t> history(prompt.begin(), prompt.end());

    auto start = std::chrono::steady_clock::now();
    std::span<const float> logits = model.prefill(prompt);
    stats.prompt_seconds = seconds_since(start);

    start = std::chrono::steady_clock::now();
    // Like run.c: the token sampled after the forward pass at the last allowed
    // position is still emitted, but not fed back.
    while (true) {
        const int32_t next = sampler.sample(logits, history);
        if (std::find(options.stop_ids.begin(), options.stop_ids.end(), next) !=
            options.stop_ids.end())
            break;
        history.push_back(next);
        ++stats.n_generated;
        on_token(next);
        if (model.pos() >= limit) break;
        logits = model.decode(next);
    }
    stats.generate_seconds = seconds_since(start);
    return stats;
}

}  // namespace anelm
