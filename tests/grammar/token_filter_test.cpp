// The token filter against brute force: in states met while generating, the
// allowed set is exactly the tokens a copy of the matcher takes, plus the stop
// ids when the document may end.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "grammar_fixtures.h"

namespace anelm::test {
namespace {

using grammar::Matcher;
using grammar::TokenFilter;

void expect_exact(const TokenFilter& filter, const Matcher& m, const std::vector<int32_t>& stop_ids,
                  const std::string& where) {
    std::vector<uint32_t> bits;
    filter.allowed(m, bits);
    for (int32_t id = 0; id < filter.n_vocab(); ++id) {
        const bool stop = std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end();
        Matcher copy = m;
        const bool expected =
            stop ? m.accepts_end()
                 : !filter.token_bytes(id).empty() && copy.advance(filter.token_bytes(id));
        ASSERT_EQ(has(bits, id), expected)
            << where << ": id " << id << " \"" << filter.token_bytes(id) << "\"";
    }
}

// States from a few generations of every schema.
void expect_exact_everywhere(const Tokenizer& tok, int runs, size_t every) {
    const std::vector<int32_t> stop_ids = tok.eos_ids();
    const TokenFilter filter(tok, stop_ids);
    for (const NamedSchema& s : test_schemas()) {
        const grammar::Grammar g = compile(s);
        for (int run = 0; run < runs; ++run) {
            std::vector<Matcher> states;
            const std::string text = generate(filter, g, stop_ids, 100 + run, &states);
            for (size_t k = 0; k < states.size(); k += every)
                expect_exact(
                    filter, states[k], stop_ids,
                    std::string(s.name) + " after " + std::to_string(k) + " tokens of " + text);
        }
    }
}

TEST(GrammarTokenFilter, MatchesBruteForceOnSmallVocabulary) {
    expect_exact_everywhere(small_tokenizer(), 6, 1);
}

TEST(GrammarTokenFilter, MatchesBruteForceOnQwen) {
    if (!have_qwen()) GTEST_SKIP() << "shared test data absent: tokenizers/qwen3";
    expect_exact_everywhere(qwen_tokenizer(), 1, 7);
}

TEST(GrammarTokenFilter, ApplyAndAdvance) {
    const PieceTokenizer& tok = small_tokenizer();
    const int32_t eos = tok.eos_ids()[0];
    const TokenFilter filter(tok, tok.eos_ids());
    const grammar::Grammar g = grammar::Grammar::from_json_schema(
        ojson::parse(R"({"type":"object","properties":{"ok":{"type":"boolean"}}})"), "s");
    Matcher m(g);
    std::vector<float> logits(tok.n_vocab() + 3, 1.0f);  // the model pads its vocabulary
    filter.apply(m, logits);
    EXPECT_EQ(logits['{'], 1.0f);
    EXPECT_EQ(logits['['], -INFINITY);
    EXPECT_EQ(logits[eos], -INFINITY);
    EXPECT_EQ(logits[tok.n_vocab()], -INFINITY);
    EXPECT_FALSE(filter.advance(m, eos));
    EXPECT_FALSE(filter.advance(m, '['));
    EXPECT_TRUE(filter.advance(m, '{'));
    EXPECT_TRUE(filter.advance(m, '}'));
    EXPECT_TRUE(m.finished());
    std::fill(logits.begin(), logits.end(), 1.0f);
    filter.apply(m, logits);
    EXPECT_EQ(std::count(logits.begin(), logits.end(), 1.0f), 1);
    EXPECT_EQ(logits[eos], 1.0f);
    EXPECT_TRUE(filter.advance(m, eos));
}

// One filter and one grammar per schema shared by threads, a matcher each: the
// same seeds give the same documents as one after another.
TEST(GrammarTokenFilter, SharedAcrossThreads) {
    const PieceTokenizer& tok = small_tokenizer();
    const TokenFilter filter(tok, tok.eos_ids());
    std::vector<grammar::Grammar> grammars;
    for (const NamedSchema& s : test_schemas()) grammars.push_back(compile(s));
    auto run = [&](uint32_t seed) {
        std::string all;
        for (const auto& g : grammars) all += generate(filter, g, tok.eos_ids(), seed) + "\n";
        return all;
    };
    std::vector<std::string> alone, together(4);
    for (uint32_t seed = 0; seed < 4; ++seed) alone.push_back(run(seed));
    std::vector<std::thread> threads;
    for (uint32_t seed = 0; seed < 4; ++seed)
        threads.emplace_back([&, seed] { together[seed] = run(seed); });
    for (auto& t : threads) t.join();
    EXPECT_EQ(together, alone);
}

}  // namespace
}  // namespace anelm::test
