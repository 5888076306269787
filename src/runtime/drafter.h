// Drafters for speculative decoding: each proposes the tokens that may follow
// a sequence, which the target model then verifies in one pass.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/token_model.h"

namespace anelm {

class Drafter {
public:
    virtual ~Drafter() = default;
    // Up to max_tokens tokens that may follow `history` (none: no guess).
    virtual std::vector<int32_t> draft(std::span<const int32_t> history, int64_t max_tokens) = 0;
};

// Prompt lookup: the tokens that followed the latest earlier occurrence of
// the sequence's last n tokens (n from `max_ngram` down to 1, the longest
// match first), in the prompt or in what was generated. Where that
// continuation reaches the sequence's end, it repeats: a sequence that
// matched itself d tokens back is taken to go on with period d.
class LookupDrafter : public Drafter {
public:
    explicit LookupDrafter(int max_ngram);
    std::vector<int32_t> draft(std::span<const int32_t> history, int64_t max_tokens) override;

private:
    int max_ngram_;
};

// A smaller model's most likely continuation, greedily: its own cache follows
// the history (kept where they agree, rewound where they part), so each call
// feeds only the tokens it has not seen, then decodes max_tokens - 1 more.
// Drafting greedily (a one-hot draft distribution) keeps the accept rule of
// sampling simple: a draft stands where the target's own sample equals it.
class ModelDrafter : public Drafter {
public:
    explicit ModelDrafter(TokenModel& model);
    std::vector<int32_t> draft(std::span<const int32_t> history, int64_t max_tokens) override;

private:
    TokenModel& model_;
    std::vector<int32_t> fed_;  // the tokens in the model's cache, in order
};

}  // namespace anelm
