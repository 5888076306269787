// Speculative decoding is lossless: with any drafter (prompt lookup, a draft
// model, one that is always wrong, one that knows the answer) greedy and
// seeded generation emit exactly the plain loop's tokens, stop where it stops,
// and a rejected draft leaves nothing behind in the cache; sampled tokens
// follow the target's distribution.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "exec/tiny_model.h"
#include "runtime/drafter.h"
#include "runtime/generate.h"
#include "runtime/oracle_drafter.h"

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

struct Generated {
    std::vector<int32_t> tokens;
    GenerateStats stats;
};

constexpr int64_t n_ctx = 96;

SessionOptions session_options(int64_t verify_tokens, const std::string& quant = "none",
                               KvType kv = KvType::f16) {
    SessionOptions so;
    so.kv = kv;
    so.n_ctx = n_ctx;
    so.threads = 2;
    so.prefill_batch = 16;
    so.verify_tokens = verify_tokens;
    so.quant = quant::parse_quant_spec(quant);
    return so;
}

GenerateOptions generate_options(Drafter* drafter, int64_t draft_n, SamplerParams sampler) {
    GenerateOptions options;
    options.max_new_tokens = -1;  // up to the context
    options.sampler = sampler;
    options.drafter = drafter;
    options.draft_n = draft_n;
    return options;
}

SamplerParams greedy() {
    SamplerParams p;
    p.temp = 0;
    p.repeat_penalty = 1.1f;  // history-dependent: drafts must keep it exact
    return p;
}

Generated generate_on(Session& session, std::span<const int32_t> prompt,
                      const GenerateOptions& options) {
    session.reset();
    Generated r;
    r.stats = generate(session, prompt, options, [&](int32_t t) { r.tokens.push_back(t); });
    return r;
}

Generated run(const LoadedModel& m, std::span<const int32_t> prompt, Drafter* drafter,
              int64_t draft_n, std::vector<int32_t> stop_ids = {}, KvType kv = KvType::f16) {
    Session session(m.spec, m.weights, session_options(drafter ? draft_n + 1 : 0, "none", kv));
    GenerateOptions options = generate_options(drafter, draft_n, greedy());
    options.stop_ids = std::move(stop_ids);
    return generate_on(session, prompt, options);
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
    test::OracleDrafter oracle(answer);
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

// int8 rows are quantized once when written, so a rejected draft's rows are
// simply written over and verifying gives the plain loop's tokens of the same
// KV type; the cache holds about half the bytes.
TEST_P(Speculative, Int8KvCachesGiveThePlainGreedyTokensOfTheirType) {
    const LoadedModel& m = test::tiny_model(GetParam());
    const std::vector<int32_t> prompt = repetitive_prompt(m.spec.n_vocab);
    auto kv_bytes = [&](KvType kv) {
        Session s(m.spec, m.weights, session_options(0, "none", kv));
        size_t bytes = 0;
        for (const auto& b : s.state().buffers) bytes += b.size() * sizeof(uint16_t);
        return bytes;
    };
    const size_t f16_bytes = kv_bytes(KvType::f16);
    for (KvType kv : {KvType::q8, KvType::k16v8}) {
        SCOPED_TRACE(kv_type_name(kv));
        EXPECT_LT(kv_bytes(kv), f16_bytes);
        const Generated plain = run(m, prompt, nullptr, 0, {}, kv);
        ASSERT_EQ(static_cast<int64_t>(prompt.size() + plain.tokens.size()), n_ctx + 1);
        for (int64_t k : {1, 7}) {
            SCOPED_TRACE(k);
            LookupDrafter lookup(3);
            const Generated looked = run(m, prompt, &lookup, k, {}, kv);
            EXPECT_EQ(looked.tokens, plain.tokens);
            EXPECT_GT(looked.stats.n_verify, 0);
            WrongDrafter wrong;
            EXPECT_EQ(run(m, prompt, &wrong, k, {}, kv).tokens, plain.tokens);
        }
    }
}

TEST_P(Speculative, ADraftModelGivesThePlainGreedyTokens) {
    const LoadedModel& m = test::tiny_model(GetParam());
    const std::vector<int32_t> prompt = test::random_tokens(m.spec.n_vocab, 10, 3);
    const Generated plain = run(m, prompt, nullptr, 0);
    // The target's own weights, quantized (--draft-quant), drafting 1 to 7
    // tokens a pass, adaptively.
    for (const char* quant : {"int8", "lut4"}) {
        SCOPED_TRACE(quant);
        Session draft_session(m.spec, m.weights, session_options(0, quant));
        ModelDrafter drafter(draft_session);
        Session target(m.spec, m.weights, session_options(8));
        GenerateOptions options = generate_options(&drafter, 7, greedy());
        options.adaptive_draft = true;
        const Generated drafted = generate_on(target, prompt, options);
        EXPECT_EQ(drafted.tokens, plain.tokens);
        EXPECT_GT(drafted.stats.n_accepted, 0);
        // Run again on the same drafter: its cache follows the new history.
        EXPECT_EQ(generate_on(target, prompt, options).tokens, plain.tokens);
    }
    // The target itself as drafter: without a penalty (which the drafter does
    // not apply), every draft is what greedy sampling takes.
    Session same(m.spec, m.weights, session_options(0));
    ModelDrafter self(same);
    SamplerParams argmax;
    argmax.temp = 0;
    Session target(m.spec, m.weights, session_options(0));
    const Generated unpenalised = generate_on(target, prompt, generate_options(nullptr, 0, argmax));
    Session verifier(m.spec, m.weights, session_options(8));
    const Generated selfed = generate_on(verifier, prompt, generate_options(&self, 7, argmax));
    EXPECT_EQ(selfed.tokens, unpenalised.tokens);
    EXPECT_GE(selfed.stats.n_accepted, selfed.stats.n_drafted * 9 / 10);
}

TEST_P(Speculative, SeededSamplingGivesThePlainTokens) {
    const LoadedModel& m = test::tiny_model(GetParam());
    const std::vector<int32_t> prompt = repetitive_prompt(m.spec.n_vocab);
    Session plain(m.spec, m.weights, session_options(0));
    Session target(m.spec, m.weights, session_options(8));
    LookupDrafter lookup(3);
    int64_t accepted = 0;
    for (uint64_t seed = 1; seed <= 8; ++seed) {
        SamplerParams p;
        p.temp = 0.7f;
        p.seed = seed;
        const Generated expected = generate_on(plain, prompt, generate_options(nullptr, 0, p));
        const Generated drafted = generate_on(target, prompt, generate_options(&lookup, 7, p));
        EXPECT_EQ(drafted.tokens, expected.tokens) << "seed " << seed;
        accepted += drafted.stats.n_accepted;
    }
    EXPECT_GT(accepted, 0);
}

INSTANTIATE_TEST_SUITE_P(Tiny, Speculative,
                         testing::Values("tiny-llama", "tiny-qwen2", "tiny-qwen3", "tiny-gemma3",
                                         "tiny-lfm2", "tiny-qwen3.5"));

// The target's next-token distribution at temperature `temp` after `tokens`.
std::vector<double> next_probs(Session& session, std::span<const int32_t> tokens, double temp) {
    session.reset();
    const std::span<const float> logits = session.prefill(tokens);
    const float top = *std::max_element(logits.begin(), logits.end());
    std::vector<double> p(logits.size());
    double sum = 0;
    for (size_t i = 0; i < p.size(); ++i) sum += p[i] = std::exp((double(logits[i]) - top) / temp);
    for (double& x : p) x /= sum;
    return p;
}

// Pearson's chi-square of observed counts against probabilities, over the
// tokens expected at least 5 times (the rest pooled): the statistic and its
// degrees of freedom.
std::pair<double, int> chi_square(const std::map<int32_t, int>& counts,
                                  const std::vector<double>& probs, int n) {
    double stat = 0, rest_expected = 0;
    int rest_observed = 0, dof = 0;
    for (size_t t = 0; t < probs.size(); ++t) {
        const double expected = probs[t] * n;
        const auto it = counts.find(static_cast<int32_t>(t));
        const int observed = it == counts.end() ? 0 : it->second;
        if (expected < 5) {
            rest_expected += expected;
            rest_observed += observed;
            continue;
        }
        stat += (observed - expected) * (observed - expected) / expected;
        ++dof;
    }
    if (rest_expected > 0) {
        stat += (rest_observed - rest_expected) * (rest_observed - rest_expected) / rest_expected;
        ++dof;
    }
    return {stat, dof - 1};
}

// Sampling with a draft model: the second and third tokens
// come from verify rows (after a draft that stood or fell), and over many seeds
// they are distributed as the target says; a wrong distribution fails the same
// test.
TEST(SpeculativeSampling, TokensFollowTheTargetsDistribution) {
    const LoadedModel& m = test::tiny_model("tiny-qwen3");
    const std::vector<int32_t> prompt = test::random_tokens(m.spec.n_vocab, 6, 11);
    Session draft_session(m.spec, m.weights, session_options(0, "int8"));
    ModelDrafter drafter(draft_session);
    Session target(m.spec, m.weights, session_options(8));
    SamplerParams p;
    p.temp = 0.3f;
    p.top_k = 0;
    p.top_p = 1;
    p.min_p = 0;
    constexpr int runs = 3000;
    std::map<int32_t, int> seconds;
    std::vector<std::vector<int32_t>> outputs;
    int64_t drafted = 0, accepted = 0;
    for (int seed = 0; seed < runs; ++seed) {
        p.seed = static_cast<uint64_t>(seed);
        GenerateOptions options = generate_options(&drafter, 3, p);
        options.max_new_tokens = 3;
        const Generated g = generate_on(target, prompt, options);
        ASSERT_EQ(g.tokens.size(), 3u);
        ++seconds[g.tokens[1]];
        outputs.push_back(g.tokens);
        drafted += g.stats.n_drafted;
        accepted += g.stats.n_accepted;
    }
    EXPECT_GT(accepted, 0);
    EXPECT_LT(accepted, drafted);

    // The second token's distribution: the first's, times the second's after it.
    Session plain(m.spec, m.weights, session_options(0));
    std::vector<int32_t> context = prompt;
    const std::vector<double> first = next_probs(plain, context, p.temp);
    std::vector<double> second(first.size(), 0.0);
    context.push_back(0);
    for (size_t a = 0; a < first.size(); ++a) {
        if (first[a] < 1e-6) continue;
        context.back() = static_cast<int32_t>(a);
        const std::vector<double> after = next_probs(plain, context, p.temp);
        for (size_t b = 0; b < after.size(); ++b) second[b] += first[a] * after[b];
    }
    const auto [stat, dof] = chi_square(seconds, second, runs);
    ASSERT_GT(dof, 3);
    // Far in the tail: chi-square's mean is dof, its deviation sqrt(2 dof).
    const double bound = dof + 6 * std::sqrt(2.0 * dof);
    EXPECT_LT(stat, bound) << "dof " << dof;
    // The same counts against the first token's distribution fail.
    EXPECT_GT(chi_square(seconds, first, runs).first, bound);

    // The third token, given the most frequent first two.
    std::map<std::vector<int32_t>, int> pairs;
    for (const auto& t : outputs) ++pairs[{t[0], t[1]}];
    const auto common = std::max_element(pairs.begin(), pairs.end(),
                                         [](auto& x, auto& y) { return x.second < y.second; });
    std::map<int32_t, int> thirds;
    for (const auto& t : outputs)
        if (t[0] == common->first[0] && t[1] == common->first[1]) ++thirds[t[2]];
    context = prompt;
    context.insert(context.end(), common->first.begin(), common->first.end());
    const auto [stat3, dof3] =
        chi_square(thirds, next_probs(plain, context, p.temp), common->second);
    EXPECT_LT(stat3, dof3 + 6 * std::sqrt(2.0 * std::max(dof3, 1))) << "dof " << dof3;
}

}  // namespace
}  // namespace anelm
