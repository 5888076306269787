// A drafter for tests that knows the answer: it drafts what a plain run
// produced after the same history, so every draft should be kept.
#pragma once

#include <algorithm>
#include <vector>

#include "runtime/drafter.h"

namespace anelm::test {

class OracleDrafter : public Drafter {
public:
    // answer: the prompt and the plain run's tokens after it.
    explicit OracleDrafter(std::vector<int32_t> answer) : answer_(std::move(answer)) {}
    std::vector<int32_t> draft(std::span<const int32_t> history, int64_t max_tokens) override {
        const auto at = std::min(history.size(), answer_.size());
        const auto end = std::min(answer_.size(), at + static_cast<size_t>(max_tokens));
        return {answer_.begin() + static_cast<long>(at), answer_.begin() + static_cast<long>(end)};
    }

private:
    std::vector<int32_t> answer_;
};

}  // namespace anelm::test
