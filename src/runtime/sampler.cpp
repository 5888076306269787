#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <chrono>

#include "base/error.h"

namespace anelm {

namespace {

// Higher logit first; the lower id wins a tie so every path is deterministic.
bool better(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
}

int32_t argmax(std::span<const float> logits) {
    size_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i)
        if (logits[i] > logits[best]) best = i;
    return static_cast<int32_t>(best);
}

}  // namespace

uint64_t random_seed() {
    std::random_device device;
    const auto now = static_cast<uint64_t>(
        std::chrono::high_resolution_clock::now().time_since_epoch().count());
    return ((uint64_t{device()} << 32) ^ device()) ^ now;
}

Sampler::Sampler(SamplerParams params) : params_(params), rng_(params.seed) {}

std::span<const float> Sampler::apply_penalty(std::span<const float> logits,
                                              std::span<const int32_t> recent_tokens) {
    const float penalty = params_.repeat_penalty;
    const float presence = params_.presence_penalty, frequency = params_.frequency_penalty;
    if ((penalty == 1.0f && presence == 0.0f && frequency == 0.0f) ||
        params_.repeat_last_n == 0 || recent_tokens.empty())
        return logits;
    size_t n = recent_tokens.size();
    if (params_.repeat_last_n > 0) n = std::min(n, static_cast<size_t>(params_.repeat_last_n));
    recent_ids_.assign(recent_tokens.end() - static_cast<ptrdiff_t>(n), recent_tokens.end());
    std::sort(recent_ids_.begin(), recent_ids_.end());

    penalised_.assign(logits.begin(), logits.end());
    for (size_t i = 0; i < recent_ids_.size();) {
        const int32_t id = recent_ids_[i];
        size_t end = i;
        while (end < recent_ids_.size() && recent_ids_[end] == id) ++end;
        const auto count = static_cast<float>(end - i);
        i = end;
        if (id < 0 || static_cast<size_t>(id) >= penalised_.size()) continue;
        // The repetition penalty counts a token once, as llama.cpp does; the
        // OpenAI penalties subtract presence once and frequency per occurrence.
        float& x = penalised_[static_cast<size_t>(id)];
        x = x > 0.0f ? x / penalty : x * penalty;
        x -= presence + frequency * count;
    }
    return penalised_;
}

void Sampler::select_candidates(std::span<const float> logits) {
    const size_t n = logits.size();
    candidates_.clear();
    if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n) {
        // A heap of the k best seen so far, worst on top: one comparison for most logits,
        // instead of sorting the whole vocabulary.
        const size_t k = static_cast<size_t>(params_.top_k);
        for (size_t i = 0; i < n; ++i) {
            Candidate c{logits[i], static_cast<int32_t>(i)};
            if (candidates_.size() < k) {
                candidates_.push_back(c);
                std::push_heap(candidates_.begin(), candidates_.end(), better);
            } else if (better(c, candidates_.front())) {
                std::pop_heap(candidates_.begin(), candidates_.end(), better);
                candidates_.back() = c;
                std::push_heap(candidates_.begin(), candidates_.end(), better);
            }
        }
        std::sort_heap(candidates_.begin(), candidates_.end(), better);
        sorted_ = true;
        return;
    }
    candidates_.reserve(n);
    for (size_t i = 0; i < n; ++i) candidates_.emplace_back(logits[i], static_cast<int32_t>(i));
    sorted_ = false;
}

void Sampler::keep_top_p() {
    // Probabilities at temperature 1, as llama.cpp applies top-p before temperature.
    float max = -INFINITY;
    for (const auto& c : candidates_) max = std::max(max, c.first);
    double total = 0.0;
    for (const auto& c : candidates_) total += std::exp(c.first - max);
    const double target = params_.top_p * total;

    // Sort a growing prefix until it holds the mass: usually a few dozen tokens, so
    // a whole vocabulary is rarely sorted.
    const size_t n = candidates_.size();
    size_t sorted_len = sorted_ ? n : 0;
    double cum = 0.0;
    for (size_t i = 0; i < n; ++i) {
        if (i == sorted_len) {
            sorted_len = std::min(n, std::max<size_t>(64, 4 * sorted_len));
            const auto first = candidates_.begin() + static_cast<ptrdiff_t>(i);
            const auto last = candidates_.begin() + static_cast<ptrdiff_t>(sorted_len);
            std::nth_element(first, last, candidates_.end(), better);
            std::sort(first, last, better);
        }
        cum += std::exp(candidates_[i].first - max);
        if (cum >= target) {
            candidates_.resize(i + 1);
            break;
        }
    }
    sorted_ = true;
}

void Sampler::keep_min_p() {
    // p >= min_p * p_max is logit >= max_logit + log(min_p).
    float max = -INFINITY;
    for (const auto& c : candidates_) max = std::max(max, c.first);
    const float threshold = max + std::log(params_.min_p);
    auto below = [&](const Candidate& c) { return c.first < threshold; };
    if (sorted_) {
        candidates_.erase(std::find_if(candidates_.begin(), candidates_.end(), below),
                          candidates_.end());
    } else {
        std::erase_if(candidates_, below);
    }
}

int32_t Sampler::draw() {
    float max = -INFINITY;
    for (const auto& c : candidates_) max = std::max(max, c.first);
    const float inv_temp = 1.0f / params_.temp;
    probs_.resize(candidates_.size());
    double total = 0.0;
    for (size_t i = 0; i < candidates_.size(); ++i) {
        probs_[i] = std::exp((candidates_[i].first - max) * inv_temp);
        total += probs_[i];
    }
    if (!(total > 0.0) || !std::isfinite(total)) return candidates_.front().second;
    // 53 random bits as a double in [0, 1): the same on every standard library.
    const double u = static_cast<double>(rng_() >> 11) * 0x1p-53 * total;
    double cum = 0.0;
    for (size_t i = 0; i < candidates_.size(); ++i) {
        cum += probs_[i];
        if (u < cum) return candidates_[i].second;
    }
    return candidates_.back().second;  // rounding left u at the very top
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> recent_tokens) {
    if (logits.empty()) fail("sampler: empty logits");
    const std::span<const float> x = apply_penalty(logits, recent_tokens);
    if (params_.temp <= 0.0f) return argmax(x);

    select_candidates(x);
    if (params_.top_p < 1.0f) keep_top_p();
    if (params_.min_p > 0.0f) keep_min_p();
    return draw();
}

}  // namespace anelm
