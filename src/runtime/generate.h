// The generation loop: prefill the prompt, then sample token by token.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/sampler.h"
#include "runtime/token_model.h"

namespace anelm {

struct GenerateOptions {
    // The sequence (prompt + generated) stops at this many tokens, as llama2.c's
    // run.c counts its steps; capped at the context.
    int64_t max_tokens = 256;
    SamplerParams sampler;
    std::vector<int32_t> stop_ids;  // generation ends when one of these is sampled
};

struct GenerateStats {
    int64_t n_prompt = 0;
    int64_t n_generated = 0;
    double prompt_seconds = 0;
    double generate_seconds = 0;
};

// Calls on_token for every generated token (stop tokens excluded).
GenerateStats generate(TokenModel& model, std::span<const int32_t> prompt,
                       const GenerateOptions& options,
                       const std::function<void(int32_t token)>& on_token);

}  // namespace anelm
