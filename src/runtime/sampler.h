// Picks the next token from a row of logits, with llama.cpp's default chain:
// repetition (and presence, frequency) penalties, top-k, top-p, min-p, temperature, then a seeded draw.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "base/value_range.h"

namespace anelm {

// What each setting accepts, on the command line and in a server request alike.
namespace sampler_limits {
inline constexpr ValueRange temp{0, 2}, top_p{0, 1}, min_p{0, 1}, top_k{0, 1 << 30},
    repeat_penalty{1e-3, 100}, presence_penalty{-2, 2}, frequency_penalty{-2, 2};
}  // namespace sampler_limits

struct SamplerParams {
    float temp = 0.8f;            // <= 0: greedy argmax
    int top_k = 40;               // <= 0: off
    float top_p = 0.95f;          // >= 1: off
    float min_p = 0.05f;          // <= 0: off; relative to the most likely token
    float repeat_penalty = 1.0f;  // 1: off
    float presence_penalty = 0;   // subtracted from tokens seen (OpenAI's); 0: off
    float frequency_penalty = 0;  // subtracted once per occurrence (OpenAI's); 0: off
    int repeat_last_n = 64;       // tokens the penalties look back over; < 0: all of them
    uint64_t seed = 0;
};

// A seed for a run that names none: from the system's entropy and the clock.
uint64_t random_seed();

class Sampler {
public:
    explicit Sampler(SamplerParams params);

    // recent_tokens: the sequence so far, oldest first (only its tail is used).
    int32_t sample(std::span<const float> logits, std::span<const int32_t> recent_tokens);

    const SamplerParams& params() const { return params_; }

private:
    using Candidate = std::pair<float, int32_t>;  // logit, id

    std::span<const float> apply_penalty(std::span<const float> logits,
                                         std::span<const int32_t> recent_tokens);
    void select_candidates(std::span<const float> logits);
    void keep_top_p();
    void keep_min_p();
    int32_t draw();

    SamplerParams params_;
    std::mt19937_64 rng_;
    std::vector<float> penalised_;  // a copy of the logits with the penalty applied
    std::vector<int32_t> recent_ids_;
    std::vector<Candidate> candidates_;  // sorted by descending logit when `sorted_`
    bool sorted_ = false;
    std::vector<float> probs_;
};

}  // namespace anelm
