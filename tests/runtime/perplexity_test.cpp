// Perplexity, KL divergence and top-1 agreement against values computed here
// from a session's logits.
#include "runtime/perplexity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "base/error.h"
#include "exec/tiny_model.h"

namespace anelm {
namespace {

using test::random_tokens;

constexpr int64_t window = 32;

std::unique_ptr<Session> make_session(const LoadedModel& m, const std::string& spec) {
    SessionOptions so;
    so.n_ctx = window;
    so.prefill_batch = window;
    so.threads = 2;
    so.all_logits = true;
    so.quant = quant::parse_quant_spec(spec);
    return std::make_unique<Session>(m.spec, m.weights, so);
}

// -log softmax(logits)[token], by the definition.
double nll(std::span<const float> logits, int32_t token) {
    double z = 0;
    for (float x : logits) z += std::exp(static_cast<double>(x));
    return std::log(z) - logits[static_cast<size_t>(token)];
}

TEST(Perplexity, IsExpOfMeanNllOverSecondHalves) {
    const LoadedModel& m = test::tiny_model("tiny-qwen3");
    const int64_t n_vocab = m.spec.n_vocab;
    const auto tokens = random_tokens(n_vocab, 3 * window + 7, 5);  // the tail makes no window
    const auto session = make_session(m, "none");
    PerplexityOptions po;
    po.n_ctx = window;
    po.bos_id = 9;
    const PerplexityResult r = perplexity(*session, nullptr, tokens, po);

    const auto reference = make_session(m, "none");
    double sum = 0, sum_sq = 0;
    int64_t n = 0;
    for (int64_t w = 0; w < 3; ++w) {
        std::vector<int32_t> ids(tokens.begin() + w * window, tokens.begin() + (w + 1) * window);
        ids[0] = 9;
        reference->reset();
        const auto logits = reference->prefill(ids);
        for (int64_t j = window / 2; j + 1 < window; ++j) {
            const double x = nll(logits.subspan(static_cast<size_t>(j * n_vocab), n_vocab),
                                 ids[static_cast<size_t>(j + 1)]);
            sum += x;
            sum_sq += x * x;
            ++n;
        }
    }
    const double mean = sum / static_cast<double>(n);
    const double se = std::sqrt((sum_sq / static_cast<double>(n) - mean * mean) / (n - 1));
    EXPECT_EQ(r.n_windows, 3);
    EXPECT_EQ(r.n_scored, n);
    EXPECT_NEAR(r.nll.mean, mean, 1e-9);
    EXPECT_NEAR(r.nll.perplexity, std::exp(mean), 1e-9 * std::exp(mean));
    EXPECT_NEAR(r.nll.perplexity_se, std::exp(mean) * se, 1e-6 * std::exp(mean) * se);
    // Random tokens on a random model: close to the uniform n_vocab.
    EXPECT_GT(r.nll.perplexity, n_vocab / 4.0);

    po.n_chunks = 2;
    EXPECT_EQ(perplexity(*session, nullptr, tokens, po).n_windows, 2);
}

TEST(Perplexity, ModelAgainstItselfHasNoDivergence) {
    const LoadedModel& m = test::tiny_model("tiny-llama");
    const auto tokens = random_tokens(m.spec.n_vocab, 2 * window, 6);
    const auto a = make_session(m, "none");
    const auto b = make_session(m, "none");
    PerplexityOptions po;
    po.n_ctx = window;
    const PerplexityResult r = perplexity(*a, b.get(), tokens, po);
    EXPECT_EQ(r.kl_mean, 0.0);
    EXPECT_EQ(r.kl_p99, 0.0);
    EXPECT_EQ(r.top1, 1.0);
    EXPECT_EQ(r.base_nll.perplexity, r.nll.perplexity);
}

TEST(Perplexity, QuantizedModelAgainstBase) {
    const LoadedModel& m = test::tiny_model("tiny-llama");
    const auto tokens = random_tokens(m.spec.n_vocab, 2 * window, 7);
    const auto base = make_session(m, "none");
    const auto lut8 = make_session(m, "lut8,min=0");
    const auto lut2 = make_session(m, "ffn=2,head=2,min=0");
    PerplexityOptions po;
    po.n_ctx = window;
    const PerplexityResult dense = perplexity(*base, nullptr, tokens, po);
    const PerplexityResult r8 = perplexity(*lut8, base.get(), tokens, po);
    const PerplexityResult r2 = perplexity(*lut2, base.get(), tokens, po);
    EXPECT_EQ(r8.base_nll.perplexity, dense.nll.perplexity);
    EXPECT_GT(r8.kl_mean, 0.0);
    EXPECT_GE(r8.kl_p99, r8.kl_mean);
    EXPECT_LT(r8.kl_mean, r2.kl_mean);  // fewer bits, further from the base
    EXPECT_GE(r8.top1, r2.top1);
    EXPECT_LE(r8.top1, 1.0);
}

TEST(Perplexity, Errors) {
    const LoadedModel& m = test::tiny_model("tiny-qwen3");
    const auto session = make_session(m, "none");
    PerplexityOptions po;
    po.n_ctx = window;
    EXPECT_THROW(perplexity(*session, nullptr, random_tokens(m.spec.n_vocab, window - 1, 8), po),
                 Error);
    po.n_ctx = 2 * window;  // beyond the session's context
    EXPECT_THROW(perplexity(*session, nullptr, random_tokens(m.spec.n_vocab, 4 * window, 8), po),
                 Error);
    SessionOptions last_only;
    last_only.n_ctx = window;
    last_only.prefill_batch = window;
    Session s(m.spec, m.weights, last_only);
    po.n_ctx = window;
    EXPECT_THROW(perplexity(s, nullptr, random_tokens(m.spec.n_vocab, window, 8), po), Error);
}

}  // namespace
}  // namespace anelm
