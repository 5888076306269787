// Speculative decoding is lossless: with any drafter (prompt lookup, one that
// is always wrong, one that knows the answer) greedy generation emits exactly
// the plain loop's tokens, stops where it stops, and a rejected draft leaves
// nothing behind in the cache.
#include <gtest/gtest.h>

#include "exec/tiny_model.h"
#include "runtime/drafter.h"
#include "runtime/generate.h"

namespace anelm {
namespace {

TEST(LookupDrafter, ContinuesTheLatestEarlierMatchLongestFirst) {
    LookupDrafter three(3);
    const std::vector<int32_t> h{1, 2, 3, 4, 1, 2};
    EXPECT_EQ(three.draft(h, 2), (std::vector<int32_t>{3, 4}));
    // Past the end the continuation repeats with its period (4 here).
    EXPECT_EQ(three.draft(h, 6), (std::vector<int32_t>{3, 4, 1, 2, 3, 4}));
    EXPECT_EQ(three.draft(std::vector<int32_t>{7, 7}, 3), (std::vector<int32_t>{7, 7, 7}));
    // [5, 1] last occurred at 3 (followed by 7), before that at 0 (followed by 9).
    const std::vector<int32_t> latest{5, 1, 9, 5, 1, 7, 5, 1};
    EXPECT_EQ(three.draft(latest, 1), (std::vector<int32_t>{7}));
    // The longer n-gram wins over a later shorter one: [8, 5, 1] occurs once.
    const std::vector<int32_t> longer{8, 5, 1, 4, 5, 1, 6, 8, 5, 1};
    EXPECT_EQ(three.draft(longer, 1), (std::vector<int32_t>{4}));
    EXPECT_TRUE(three.draft(std::vector<int32_t>{1, 2, 3}, 4).empty());
    EXPECT_TRUE(three.draft(h, 0).empty());
    EXPECT_THROW(LookupDrafter(0), Error);
}

// Drafts a fixed wrong token (one the model never sees next).
class WrongDrafter : public Drafter {
public:
    std::vector<int32_t> draft(std::span<const int32_t> history, int64_t max_tokens) override {
        return std::vector<int32_t>(static_cast<size_t>(max_tokens), history.back() == 3 ? 4 : 3);
    }
};

// Drafts what the plain loop produced after the same history.
class OracleDrafter : public Drafter {
public:
    explicit OracleDrafter(std::vector<int32_t> answer) : answer_(std::move(answer)) {}
    std::vector<int32_t> draft(std::span<const int32_t> history, int64_t max_tokens) override {
        const auto at = std::min(history.size(), answer_.size());
        const auto end = std::min(answer_.size(), at + static_cast<size_t>(max_tokens));
        return {answer_.begin() + static_cast<long>(at), answer_.begin() + static_cast<long>(end)};
    }

private:
    std::vector<int32_t> answer_;
};

struct Generated {
    std::vector<int32_t> tokens;
    GenerateStats stats;
};

constexpr int64_t n_ctx = 96;

Generated run(const LoadedModel& m, std::span<const int32_t> prompt, Drafter* drafter, int64_t draft_n,
        std::vector<int32_t> stop_ids = {}) {
    SessionOptions so;
    so.n_ctx = n_ctx;
    so.threads = 2;
    so.prefill_batch = 16;
    so.verify_tokens = drafter ? draft_n + 1 : 0;
    Session session(m.spec, m.weights, so);
    GenerateOptions options;
    options.max_tokens = n_ctx;
    options.sampler.temp = 0;
    options.sampler.repeat_penalty = 1.1f;  // history-dependent: drafts must keep it exact
    options.stop_ids = std::move(stop_ids);
    options.drafter = drafter;
    options.draft_n = draft_n;
    Generated r;
    r.stats = generate(session, prompt, options, [&](int32_t t) { r.tokens.push_back(t); });
    return r;
}

// A prompt that repeats itself, so prompt lookup finds something to draft.
std::vector<int32_t> repetitive_prompt(int64_t n_vocab) {
    std::vector<int32_t> p = test::random_tokens(n_vocab, 12, 17);
    const std::vector<int32_t> again = p;
    p.insert(p.end(), again.begin(), again.end());
    p.insert(p.end(), again.begin(), again.begin() + 5);
    return p;
}

class Speculative : public testing::TestWithParam<const char*> {};

TEST_P(Speculative, EveryDrafterGivesThePlainGreedyTokens) {
    const LoadedModel& m = test::tiny_model(GetParam());
    const std::vector<int32_t> prompt = repetitive_prompt(m.spec.n_vocab);
    const Generated plain = run(m, prompt, nullptr, 0);
    ASSERT_EQ(static_cast<int64_t>(prompt.size() + plain.tokens.size()), n_ctx + 1);

    for (int64_t k : {1, 3, 7}) {
        SCOPED_TRACE(k);
        LookupDrafter lookup(3);
        const Generated looked = run(m, prompt, &lookup, k);
        EXPECT_EQ(looked.tokens, plain.tokens);
        EXPECT_GT(looked.stats.n_verify, 0);

        WrongDrafter wrong;
        const Generated rejected = run(m, prompt, &wrong, k);
        EXPECT_EQ(rejected.tokens, plain.tokens);
        EXPECT_LE(rejected.stats.n_accepted, rejected.stats.n_drafted / 4);
    }

    std::vector<int32_t> answer = prompt;
    answer.insert(answer.end(), plain.tokens.begin(), plain.tokens.end());
    OracleDrafter oracle(answer);
    const Generated known = run(m, prompt, &oracle, 7);
    EXPECT_EQ(known.tokens, plain.tokens);
    EXPECT_EQ(known.stats.n_accepted, known.stats.n_drafted);
    EXPECT_LE(known.stats.n_verify, (static_cast<int64_t>(plain.tokens.size()) + 7) / 8 + 1);

    // A stop token among accepted drafts ends generation where the plain loop ends.
    const int32_t stop = plain.tokens.at(20);
    const Generated plain_stop = run(m, prompt, nullptr, 0, {stop});
    const Generated known_stop = run(m, prompt, &oracle, 7, {stop});
    EXPECT_EQ(known_stop.tokens, plain_stop.tokens);
    EXPECT_LE(plain_stop.tokens.size(), 20u);
}

INSTANTIATE_TEST_SUITE_P(Tiny, Speculative,
                         testing::Values("tiny-llama", "tiny-qwen2", "tiny-qwen3", "tiny-gemma3"));

}  // namespace
}  // namespace anelm
