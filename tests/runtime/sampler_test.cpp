#include "runtime/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <vector>

namespace anelm {
namespace {

SamplerParams no_filters(float temp, uint64_t seed = 1) {
    SamplerParams p;
    p.temp = temp;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = seed;
    return p;
}

std::vector<float> random_logits(size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> logits(n);
    for (float& x : logits) x = normal(rng);
    return logits;
}

int32_t argmax(const std::vector<float>& logits) {
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

std::vector<double> softmax(const std::vector<float>& logits, float temp) {
    const float max = *std::max_element(logits.begin(), logits.end());
    std::vector<double> p(logits.size());
    double total = 0.0;
    for (size_t i = 0; i < p.size(); ++i) total += p[i] = std::exp((logits[i] - max) / temp);
    for (double& x : p) x /= total;
    return p;
}

// Frequencies of each id over n draws.
std::vector<double> histogram(Sampler& sampler, const std::vector<float>& logits, int n) {
    std::vector<double> freq(logits.size(), 0.0);
    for (int i = 0; i < n; ++i) freq[static_cast<size_t>(sampler.sample(logits, {}))] += 1.0 / n;
    return freq;
}

TEST(Sampler, GreedyPicksArgmax) {
    Sampler sampler(no_filters(0.0f));
    for (uint64_t seed = 0; seed < 20; ++seed) {
        const auto logits = random_logits(1000, seed);
        EXPECT_EQ(sampler.sample(logits, {}), argmax(logits));
    }
}

TEST(Sampler, GreedyTieGoesToLowestId) {
    Sampler sampler(no_filters(0.0f));
    const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f, 2.0f};
    EXPECT_EQ(sampler.sample(logits, {}), 1);
}

TEST(Sampler, TopKOneIsGreedy) {
    SamplerParams p = no_filters(1.5f, 7);
    p.top_k = 1;
    Sampler sampler(p);
    for (uint64_t seed = 0; seed < 50; ++seed) {
        const auto logits = random_logits(5000, seed);
        EXPECT_EQ(sampler.sample(logits, {}), argmax(logits));
    }
}

TEST(Sampler, TopKKeepsOnlyTheKBestWithRenormalisedProbabilities) {
    const std::vector<float> logits = {1.0f, 3.0f, 0.0f, 2.5f, 2.0f, -1.0f};
    SamplerParams p = no_filters(1.0f, 3);
    p.top_k = 3;
    Sampler sampler(p);
    const auto freq = histogram(sampler, logits, 100000);
    const auto expected = softmax({3.0f, 2.5f, 2.0f}, 1.0f);
    EXPECT_NEAR(freq[1], expected[0], 0.01);
    EXPECT_NEAR(freq[3], expected[1], 0.01);
    EXPECT_NEAR(freq[4], expected[2], 0.01);
    EXPECT_EQ(freq[0] + freq[2] + freq[5], 0.0);
}

TEST(Sampler, TopKOnLargeVocabularyStaysInTheTopK) {
    const auto logits = random_logits(151936, 11);
    std::vector<float> sorted = logits;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    const float kth = sorted[39];
    SamplerParams p = no_filters(2.0f, 5);
    p.top_k = 40;
    Sampler sampler(p);
    for (int i = 0; i < 200; ++i)
        EXPECT_GE(logits[static_cast<size_t>(sampler.sample(logits, {}))], kth);
}

TEST(Sampler, SmallTopPKeepsOnlyTheTopToken) {
    SamplerParams p = no_filters(1.0f, 9);
    p.top_p = 0.01f;
    Sampler sampler(p);
    const auto logits = random_logits(2000, 4);
    for (int i = 0; i < 200; ++i) EXPECT_EQ(sampler.sample(logits, {}), argmax(logits));
}

TEST(Sampler, TopPKeepsTheSmallestPrefixReachingP) {
    // Probabilities 0.5, 0.25, 0.125, 0.125: p = 0.7 needs the first two.
    const std::vector<float> logits = {std::log(0.5f), std::log(0.25f), std::log(0.125f),
                                       std::log(0.125f)};
    SamplerParams p = no_filters(1.0f, 2);
    p.top_p = 0.7f;
    Sampler sampler(p);
    const auto freq = histogram(sampler, logits, 60000);
    EXPECT_NEAR(freq[0], 2.0 / 3.0, 0.01);
    EXPECT_NEAR(freq[1], 1.0 / 3.0, 0.01);
    EXPECT_EQ(freq[2] + freq[3], 0.0);
}

TEST(Sampler, TopPOnLargeVocabularyStaysInTheNucleus) {
    // Wide logits put the 0.9 nucleus in the thousands, past the first sorted prefix.
    const auto logits = random_logits(20000, 17);
    const auto probs = softmax(logits, 1.0f);
    std::vector<int32_t> order(logits.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
    std::sort(order.begin(), order.end(),
              [&](int32_t a, int32_t b) { return probs[a] > probs[b]; });
    std::set<int32_t> nucleus;
    double cum = 0.0;
    for (int32_t id : order) {
        nucleus.insert(id);
        if ((cum += probs[id]) >= 0.9) break;
    }
    ASSERT_GT(nucleus.size(), 256u);
    SamplerParams p = no_filters(1.0f, 6);
    p.top_p = 0.9f;
    Sampler sampler(p);
    std::set<int32_t> drawn;
    for (int i = 0; i < 100; ++i) {
        const int32_t id = sampler.sample(logits, {});
        EXPECT_TRUE(nucleus.count(id)) << id;
        drawn.insert(id);
    }
    EXPECT_GT(drawn.size(), 30u);
}

TEST(Sampler, MinPDropsTokensBelowAFractionOfTheBest) {
    // Probabilities 0.5, 0.3, 0.15, 0.05: min_p 0.2 keeps those >= 0.1.
    const std::vector<float> logits = {std::log(0.3f), std::log(0.05f), std::log(0.5f),
                                       std::log(0.15f)};
    SamplerParams p = no_filters(1.0f, 8);
    p.min_p = 0.2f;
    Sampler sampler(p);
    const auto freq = histogram(sampler, logits, 60000);
    EXPECT_EQ(freq[1], 0.0);
    EXPECT_NEAR(freq[2], 0.5 / 0.95, 0.01);
    EXPECT_NEAR(freq[0], 0.3 / 0.95, 0.01);
    EXPECT_NEAR(freq[3], 0.15 / 0.95, 0.01);
}

TEST(Sampler, RepetitionPenaltyChangesTheArgmax) {
    SamplerParams p = no_filters(0.0f);
    p.repeat_penalty = 1.2f;
    p.repeat_last_n = 4;
    Sampler sampler(p);
    // Positive logits are divided: 2.0 / 1.2 < 1.9.
    const std::vector<float> positive = {2.0f, 1.9f, -1.0f};
    const std::vector<int32_t> recent = {2, 0, 0};
    EXPECT_EQ(sampler.sample(positive, {}), 0);
    EXPECT_EQ(sampler.sample(positive, recent), 1);
    // Negative logits are multiplied: -0.5 * 1.2 < -0.55.
    const std::vector<float> negative = {-0.5f, -0.55f, -3.0f};
    EXPECT_EQ(sampler.sample(negative, recent), 1);
    // Only the last repeat_last_n tokens count.
    const std::vector<int32_t> old = {0, 2, 2, 2, 2};
    EXPECT_EQ(sampler.sample(positive, old), 0);
}

TEST(Sampler, PresenceAndFrequencyPenaltiesSubtract) {
    SamplerParams p = no_filters(0.0f);
    p.repeat_last_n = -1;
    const std::vector<float> logits = {3.0f, 2.5f, 1.2f};
    const std::vector<int32_t> recent = {0, 1, 0, 0};  // 0 three times, 1 once
    p.presence_penalty = 0.4f;  // 3.0 - 0.4 = 2.6 > 2.5 - 0.4
    EXPECT_EQ(Sampler(p).sample(logits, recent), 0);
    p.presence_penalty = 0;
    p.frequency_penalty = 0.3f;  // 3.0 - 0.9 = 2.1 < 2.5 - 0.3
    EXPECT_EQ(Sampler(p).sample(logits, recent), 1);
    p.presence_penalty = 1.0f;  // 3.0 - 1.9 = 1.1, 2.5 - 1.3 = 1.2 = 1.2: the lower id
    EXPECT_EQ(Sampler(p).sample(logits, recent), 1);
    p.presence_penalty = 1.1f;  // 2.5 - 1.4 = 1.1 < 1.2, which was never seen
    EXPECT_EQ(Sampler(p).sample(logits, recent), 2);
}

TEST(Sampler, SameSeedSameSequence) {
    const auto logits = random_logits(32000, 21);
    std::vector<int32_t> tokens;
    auto run = [&](uint64_t seed) {
        SamplerParams p;  // the default chain
        p.seed = seed;
        p.temp = 1.5f;
        p.repeat_penalty = 1.1f;
        Sampler sampler(p);
        std::vector<int32_t> out;
        for (int i = 0; i < 100; ++i) out.push_back(sampler.sample(logits, out));
        return out;
    };
    const auto a = run(42);
    EXPECT_EQ(a, run(42));
    EXPECT_NE(a, run(43));
    EXPECT_GT(std::set<int32_t>(a.begin(), a.end()).size(), 1u);
}

TEST(Sampler, DrawsMatchSoftmaxAtTemperatureOne) {
    const std::vector<float> logits = {0.1f, 1.2f, -0.7f, 2.0f, 0.0f, 1.0f, -2.0f, 0.5f};
    Sampler sampler(no_filters(1.0f, 12345));
    const auto freq = histogram(sampler, logits, 200000);
    const auto expected = softmax(logits, 1.0f);
    for (size_t i = 0; i < logits.size(); ++i) EXPECT_NEAR(freq[i], expected[i], 0.005) << i;
}

TEST(Sampler, TemperatureSharpensTheDistribution) {
    const std::vector<float> logits = {0.1f, 1.2f, -0.7f, 2.0f};
    Sampler sampler(no_filters(0.5f, 99));
    const auto freq = histogram(sampler, logits, 200000);
    const auto expected = softmax(logits, 0.5f);
    for (size_t i = 0; i < logits.size(); ++i) EXPECT_NEAR(freq[i], expected[i], 0.005) << i;
}

}  // namespace
}  // namespace anelm
