// Random constrained generation: whatever allowed tokens are picked, the text
// parses as JSON and is valid against the schema (checked by the test's own
// validator), for hundreds of seeds.
#include <gtest/gtest.h>

#include "grammar_fixtures.h"

namespace anelm::test {
namespace {

void expect_valid_generations(const Tokenizer& tok, uint32_t seeds) {
    const std::vector<int32_t> stop_ids = tok.eos_ids();
    const grammar::TokenFilter filter(tok, stop_ids);
    for (const NamedSchema& s : test_schemas()) {
        const grammar::Grammar g = compile(s);
        const ojson schema =
            std::string(s.text).empty() ? ojson{{"type", "object"}} : ojson::parse(s.text);
        for (uint32_t seed = 0; seed < seeds; ++seed) {
            const std::string text = generate(filter, g, stop_ids, seed);
            ojson value;
            try {
                value = ojson::parse(text);
            } catch (const nlohmann::json::exception& e) {
                FAIL() << s.name << " seed " << seed << ": " << e.what() << "\n" << text;
            }
            const std::string why = validate(value, schema, schema);
            ASSERT_EQ(why, "") << s.name << " seed " << seed << ": " << text;
        }
    }
}

TEST(GrammarGeneration, SmallVocabularyAlwaysValid) {
    expect_valid_generations(small_tokenizer(), 300);
}

TEST(GrammarGeneration, QwenAlwaysValid) {
    if (!have_qwen()) GTEST_SKIP() << "shared test data absent: tokenizers/qwen3";
    expect_valid_generations(qwen_tokenizer(), 20);
}

}  // namespace
}  // namespace anelm::test
