// Decoding several sequences in one pass gives each the logits it gets alone:
// every sequence keeps its own cache and position, whatever its neighbours do.
#include <gtest/gtest.h>

#include "exec/tiny_model.h"

namespace anelm {
namespace {

constexpr int64_t steps = 12;

SessionOptions options(int64_t batch_rows, const std::string& quant) {
    SessionOptions so = test::tiny_session_options(quant);
    so.all_logits = false;
    so.prefill_batch = 8;
    so.batch_rows = batch_rows;
    return so;
}

int32_t argmax(std::span<const float> row) {
    return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

// Greedy logits of every step of one prompt run alone.
std::vector<std::vector<float>> alone(const LoadedModel& m, const std::string& quant,
                                      const std::vector<int32_t>& prompt) {
    Session session(m.spec, m.weights, options(0, quant));
    std::vector<std::vector<float>> rows;
    auto logits = session.prefill(prompt);
    for (int64_t s = 0; s < steps; ++s) {
        rows.emplace_back(logits.begin(), logits.end());
        logits = session.decode(argmax(logits));
    }
    return rows;
}

class DecodeBatch : public testing::TestWithParam<std::tuple<const char*, const char*>> {};

TEST_P(DecodeBatch, EverySequenceGetsItsOwnLogits) {
    const auto [preset, quant] = GetParam();
    const LoadedModel& m = test::tiny_model(preset);
    // Prompts of different lengths, so the sequences sit at different positions.
    const std::vector<std::vector<int32_t>> prompts = {test::random_tokens(m.spec.n_vocab, 5, 1),
                                                       test::random_tokens(m.spec.n_vocab, 17, 2),
                                                       test::random_tokens(m.spec.n_vocab, 9, 3)};
    Session session(m.spec, m.weights, options(4, quant));
    std::vector<Sequence> seqs;
    std::vector<int32_t> next;
    for (const auto& p : prompts) {
        seqs.push_back(session.new_sequence());
        next.push_back(argmax(session.prefill(seqs.back(), p)));
    }
    std::vector<Sequence*> running;
    for (Sequence& s : seqs) running.push_back(&s);
    const auto n_vocab = static_cast<size_t>(m.spec.n_vocab);
    std::vector<std::vector<std::vector<float>>> batched(prompts.size());
    for (int64_t s = 1; s < steps; ++s) {
        // The second sequence leaves halfway; the batch goes on without it.
        if (s == steps / 2) {
            running.erase(running.begin() + 1);
            next.erase(next.begin() + 1);
        }
        const auto logits = session.decode_batch(running, next);
        ASSERT_EQ(logits.size(), running.size() * n_vocab);
        for (size_t i = 0; i < running.size(); ++i) {
            const std::span<const float> row = logits.subspan(i * n_vocab, n_vocab);
            batched[static_cast<size_t>(running[i] - seqs.data())].emplace_back(row.begin(),
                                                                                row.end());
            next[i] = argmax(row);
        }
    }
    for (size_t p = 0; p < prompts.size(); ++p) {
        SCOPED_TRACE(p);
        const auto want = alone(m, quant, prompts[p]);
        ASSERT_EQ(batched[p].size(), p == 1 ? size_t{steps / 2 - 1} : size_t{steps - 1});
        for (size_t s = 0; s < batched[p].size(); ++s) {
            EXPECT_LT(test::relative_error(batched[p][s], want[s + 1]), 1e-5) << "step " << s;
            EXPECT_EQ(argmax(batched[p][s]), argmax(want[s + 1]));
        }
        EXPECT_EQ(seqs[p].pos, static_cast<int64_t>(prompts[p].size()) +
                                   static_cast<int64_t>(batched[p].size()));
    }
}

INSTANTIATE_TEST_SUITE_P(Tiny, DecodeBatch,
                         testing::Combine(testing::Values("tiny-llama", "tiny-qwen3", "tiny-gemma3",
                                                          "tiny-lfm2", "tiny-qwen3.5"),
                                          testing::Values("none", "lut4", "int8")));

// A prompt fed in the same pass as other sequences' decode steps: every
// sequence's logits are those it gets alone.
TEST_P(DecodeBatch, PromptsAndDecodeStepsShareAPass) {
    const auto [preset, quant] = GetParam();
    const LoadedModel& m = test::tiny_model(preset);
    const std::vector<int32_t> a = test::random_tokens(m.spec.n_vocab, 6, 4);
    const std::vector<int32_t> b = test::random_tokens(m.spec.n_vocab, 11, 5);
    Session session(m.spec, m.weights, options(3, quant));
    Sequence sa = session.new_sequence(), sb = session.new_sequence();
    const int32_t next_a = argmax(session.prefill(sa, a));
    // One pass: a's next token, and b's whole prompt in two pieces of 7 and 4.
    std::vector<Sequence*> seqs{&sa, &sb};
    std::vector<int32_t> tokens{next_a};
    tokens.insert(tokens.end(), b.begin(), b.begin() + 7);
    const auto first = session.step(seqs, tokens, std::vector<int64_t>{1, 7});
    const auto n_vocab = static_cast<size_t>(m.spec.n_vocab);
    ASSERT_EQ(first.size(), 2 * n_vocab);
    const std::vector<float> a_row(first.begin(), first.begin() + n_vocab);
    const int32_t next_a2 = argmax(a_row);
    std::vector<int32_t> rest{next_a2};
    rest.insert(rest.end(), b.begin() + 7, b.end());
    const auto second = session.step(seqs, rest, std::vector<int64_t>{1, 4});
    const std::vector<float> b_row(second.begin() + n_vocab, second.end());

    // Rows in a larger product may be summed in another order: f32 rounding only.
    const auto want_a = alone(m, quant, a);
    EXPECT_LT(test::relative_error(a_row, want_a[1]), 1e-4);
    EXPECT_LT(test::relative_error(std::span(second).first(n_vocab), want_a[2]), 1e-4);
    EXPECT_LT(test::relative_error(b_row, alone(m, quant, b)[0]), 1e-4);
    EXPECT_EQ(next_a2, argmax(want_a[1]));
    EXPECT_EQ(sa.pos, 8);
    EXPECT_EQ(sb.pos, 11);
}

TEST(DecodeBatchLimits, RefusesMoreSequencesThanItsFunctionTakes) {
    const LoadedModel& m = test::tiny_model("tiny-llama");
    Session session(m.spec, m.weights, options(2, "none"));
    std::vector<Sequence> seqs(3);
    for (Sequence& s : seqs) s = session.new_sequence();
    std::vector<Sequence*> all{&seqs[0], &seqs[1], &seqs[2]};
    const std::vector<int32_t> tokens{1, 2, 3};
    EXPECT_THROW(session.decode_batch(all, tokens), Error);
    EXPECT_THROW(session.decode_batch(std::span(all).first(2), std::span(tokens).first(1)), Error);
}

}  // namespace
}  // namespace anelm
