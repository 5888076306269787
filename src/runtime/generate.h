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
    // The sequence (prompt + generated) stops at this many tokens, as llama2.c's
    // run.c counts its steps; capped at the context.
    int64_t max_tokens = 256;
    SamplerParams sampler;
    std::vector<int32_t> stop_ids;  // generation ends when one of these is sampled
    // Speculative decoding: the drafter proposes up to draft_n tokens, the model
    // verifies them with the last sampled token in one pass, and the tokens it
    // would have sampled itself are kept. Greedy only (temp 0), so the text is
    // the plain loop's, token for token.
    Drafter* drafter = nullptr;
    int64_t draft_n = 7;
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
