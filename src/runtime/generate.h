// The generation loop: prefill the prompt, then sample token by token (or
// verify drafted tokens several at a time).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/drafter.h"
#include "runtime/sampler.h"
#include "runtime/token_model.h"

namespace anelm {

struct GenerateOptions {
    // At most this many tokens are generated (< 0: no limit but the context).
    int64_t max_new_tokens = 256;
    // The sequence (the cache's positions, prompt + generated) stops at this
    // many tokens, as llama2.c's run.c counts its steps (< 0: no such limit).
    // Both limits are capped at the context.
    int64_t max_steps = -1;
    SamplerParams sampler;
    std::vector<int32_t> stop_ids;  // generation ends when one of these is sampled
    // The tokens already in the model's cache before the prompt (a chat's
    // earlier turns): the penalties and the drafter see them as history.
    std::span<const int32_t> context;
    // Speculative decoding: the drafter proposes up to draft_n tokens, the model
    // verifies them with the last sampled token in one pass, and each row is
    // sampled as the plain loop would sample it; a draft stands while it equals
    // the sample. Every emitted token is thus drawn from the target's own
    // distribution, with the same random draws: greedy or seeded, the text is
    // the plain loop's.
    Drafter* drafter = nullptr;
    int64_t draft_n = 7;
    // Adaptive draft length: two more after a pass that kept every draft, one
    // fewer after a pass that rejected one (between 1 and draft_n).
    bool adaptive_draft = false;
};

struct GenerateStats {
    int64_t n_prompt = 0;
    int64_t n_generated = 0;
    double prompt_seconds = 0;
    double generate_seconds = 0;
    int64_t n_verify = 0;    // verify passes (speculative decoding)
    int64_t n_drafted = 0;   // tokens drafted into them
    int64_t n_accepted = 0;  // drafted tokens the model kept
};

// Calls on_token for every generated token (stop tokens excluded).
GenerateStats generate(TokenModel& model, std::span<const int32_t> prompt,
                       const GenerateOptions& options,
                       const std::function<void(int32_t token)>& on_token);

}  // namespace anelm
