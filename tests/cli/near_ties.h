// Two paths that sum in different orders (the CPU's matrix products, the MIL
// interpreter's convolutions) give logits a few ulps of half precision
// apart, so their greedy texts part at the first near tie, wherever it falls.
// This compares them step by step instead: the CPU's greedy tokens are fed to
// both, and at each step the other path must choose the CPU's token unless
// the CPU's own best two are within `tie` of each other.
#pragma once

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "runtime/token_model.h"

namespace anelm::test {

struct NearTieComparison {
    int steps = 0;
    int near_ties = 0;    // steps whose best two the CPU puts within `tie`
    int disagreed = 0;    // steps the paths chose differently outside a near tie
    double max_diff = 0;  // the largest logit difference where both give logits
};

inline NearTieComparison compare_greedy_steps(TokenModel& cpu, TokenModel& other,
                                              std::span<const int32_t> prompt, int steps,
                                              float tie) {
    NearTieComparison c;
    std::vector<float> a, b;
    auto take = [](std::span<const float> logits, std::vector<float>& into) {
        into.assign(logits.begin(), logits.end());
    };
    take(cpu.prefill(prompt), a);
    take(other.prefill(prompt), b);
    for (; c.steps < steps; ++c.steps) {
        const auto best = std::max_element(a.begin(), a.end());
        const auto token = static_cast<int32_t>(best - a.begin());
        float second = -INFINITY;
        for (size_t i = 0; i < a.size(); ++i)
            if (static_cast<int32_t>(i) != token) second = std::max(second, a[i]);
        const bool near_tie = *best - second <= tie;
        c.near_ties += near_tie;
        const auto chosen = static_cast<int32_t>(std::max_element(b.begin(), b.end()) - b.begin());
        if (chosen != token && !near_tie) ++c.disagreed;
        for (size_t i = 0; i < a.size(); ++i)
            if (std::isfinite(b[i]))
                c.max_diff = std::max<double>(c.max_diff, std::fabs(a[i] - b[i]));
        if (cpu.pos() + 1 >= cpu.n_ctx()) break;
        take(cpu.decode(token), a);
        take(other.decode(token), b);
    }
    return c;
}

}  // namespace anelm::test
