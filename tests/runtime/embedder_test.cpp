// Embeddings against the forward pass that scores text: a vector is the final
// norm's output of the session's own prefill (read by an observer), pooled and
// scaled to unit length by hand.
#include "runtime/embedder.h"

#include <gtest/gtest.h>

#include <cmath>

#include "exec/tiny_model.h"

namespace anelm {
namespace {

SessionOptions embed_options(int64_t batch_rows, int64_t prefill_batch = 32) {
    SessionOptions so = test::tiny_session_options("none");
    so.prefill_batch = prefill_batch;
    so.batch_rows = batch_rows;
    so.hidden = true;
    return so;
}

// Every token's output_norm row from an all-logits prefill, pooled here.
std::vector<float> reference(const LoadedModel& m, const std::vector<int32_t>& tokens,
                             Pooling pooling) {
    Session session(m.spec, m.weights, test::all_logits(64));
    std::vector<float> rows;
    session.executor().set_observer([&](const ir::Node& node, std::span<const float> value) {
        if (node.name == "output_norm") rows.assign(value.begin(), value.end());
    });
    session.prefill(tokens);
    const auto width = static_cast<size_t>(m.spec.n_embd);
    EXPECT_EQ(rows.size(), tokens.size() * width);
    std::vector<double> v(width);
    const size_t n = tokens.size();
    for (size_t c = 0; c < width; ++c) {
        if (pooling == Pooling::mean) {
            for (size_t r = 0; r < n; ++r) v[c] += rows[r * width + c];
            v[c] /= static_cast<double>(n);
        } else {
            v[c] = rows[(pooling == Pooling::last ? n - 1 : 0) * width + c];
        }
    }
    double norm = 0;
    for (double x : v) norm += x * x;
    std::vector<float> out;
    for (double x : v) out.push_back(static_cast<float>(x / std::sqrt(norm)));
    return out;
}

double length(std::span<const float> v) {
    double sum = 0;
    for (float x : v) sum += static_cast<double>(x) * x;
    return std::sqrt(sum);
}

class EmbedderFamilies : public testing::TestWithParam<const char*> {};

TEST_P(EmbedderFamilies, PoolsTheFinalNormOfTheForwardPass) {
    const LoadedModel& m = test::tiny_model(GetParam());
    const std::vector<std::vector<int32_t>> inputs = {test::random_tokens(m.spec.n_vocab, 7, 1),
                                                      test::random_tokens(m.spec.n_vocab, 12, 2)};
    Session session(m.spec, m.weights, embed_options(0));
    for (Pooling pooling : {Pooling::mean, Pooling::last, Pooling::cls}) {
        Embedder embedder(session, pooling);
        EXPECT_EQ(embedder.dims(), m.spec.n_embd);
        const auto vectors = embedder.embed(inputs);
        ASSERT_EQ(vectors.size(), inputs.size());
        for (size_t i = 0; i < inputs.size(); ++i) {
            EXPECT_NEAR(length(vectors[i]), 1.0, 1e-5);
            EXPECT_LT(test::relative_error(vectors[i], reference(m, inputs[i], pooling)), 1e-5)
                << pooling_name(pooling) << " input " << i;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Tiny, EmbedderFamilies,
                         testing::Values("tiny-llama", "tiny-qwen3", "tiny-gemma3", "tiny-lfm2",
                                         "tiny-qwen3.5"));

TEST(Embedder, MeanAndLastDiffer) {
    const LoadedModel& m = test::tiny_model("tiny-qwen3");
    const std::vector<std::vector<int32_t>> input = {test::random_tokens(m.spec.n_vocab, 9, 4)};
    Session session(m.spec, m.weights, embed_options(0));
    const auto mean = Embedder(session, Pooling::mean).embed(input)[0];
    const auto last = Embedder(session, Pooling::last).embed(input)[0];
    EXPECT_GT(test::relative_error(mean, last), 0.05);
}

TEST(Embedder, ABatchOfThreeEqualsThreeSingles) {
    const LoadedModel& m = test::tiny_model("tiny-qwen3");
    const std::vector<std::vector<int32_t>> inputs = {test::random_tokens(m.spec.n_vocab, 5, 5),
                                                      test::random_tokens(m.spec.n_vocab, 11, 6),
                                                      test::random_tokens(m.spec.n_vocab, 3, 7)};
    Session batched(m.spec, m.weights, embed_options(4));
    const auto together = Embedder(batched, Pooling::mean).embed(inputs);
    Session single(m.spec, m.weights, embed_options(0));
    Embedder one(single, Pooling::mean);
    for (size_t i = 0; i < inputs.size(); ++i) {
        const auto alone = one.embed(std::span(inputs).subspan(i, 1))[0];
        EXPECT_LT(test::relative_error(together[i], alone), 1e-5) << "input " << i;
    }
}

TEST(Embedder, AnInputPastThePrefillBatchRunsInPieces) {
    const LoadedModel& m = test::tiny_model("tiny-qwen3");
    const std::vector<std::vector<int32_t>> inputs = {test::random_tokens(m.spec.n_vocab, 4, 8),
                                                      test::random_tokens(m.spec.n_vocab, 21, 9)};
    Session session(m.spec, m.weights, embed_options(2, 8));
    const auto vectors = Embedder(session, Pooling::mean).embed(inputs);
    for (size_t i = 0; i < inputs.size(); ++i)
        EXPECT_LT(test::relative_error(vectors[i], reference(m, inputs[i], Pooling::mean)), 1e-5);
}

TEST(Embedder, RefusesEmptyAndOverlongInputs) {
    const LoadedModel& m = test::tiny_model("tiny-qwen3");
    Session session(m.spec, m.weights, embed_options(0));
    Embedder embedder(session, Pooling::mean);
    EXPECT_THROW(embedder.embed(std::vector<std::vector<int32_t>>{{}}), Error);
    EXPECT_THROW(embedder.embed(
                     std::vector<std::vector<int32_t>>{test::random_tokens(m.spec.n_vocab, 65, 1)}),
                 Error);
    Session plain(m.spec, m.weights, test::tiny_session_options("none"));
    EXPECT_THROW(Embedder(plain, Pooling::mean), Error);
}

TEST(PoolRows, MeanLastAndFirstRowThenUnitLength) {
    const std::vector<float> rows = {0, 4, 6, 0, 3, 8};  // three rows of two
    std::vector<float> out(2);
    pool_rows(rows, Pooling::mean, out);  // (3, 4)
    EXPECT_FLOAT_EQ(out[0], 0.6f);
    EXPECT_FLOAT_EQ(out[1], 0.8f);
    pool_rows(rows, Pooling::cls, out);
    EXPECT_FLOAT_EQ(out[0], 0.0f);
    EXPECT_FLOAT_EQ(out[1], 1.0f);
    pool_rows(rows, Pooling::last, out);
    EXPECT_FLOAT_EQ(out[0], static_cast<float>(3 / std::sqrt(73.0)));
    EXPECT_FLOAT_EQ(out[1], static_cast<float>(8 / std::sqrt(73.0)));
    EXPECT_THROW(pool_rows(std::vector<float>{1, 2, 3}, Pooling::mean, out), Error);
}

}  // namespace
}  // namespace anelm
