// StreamDecoder: pieces pushed one id at a time join to the whole decode, and no
// piece ends inside a UTF-8 character (hf_vectors_test streams every vector too).
#include <gtest/gtest.h>

#include "tokenizer/utf8.h"
#include "tokenizer_fixtures.h"

namespace anelm::test {
namespace {

std::string stream_all(const Tokenizer& tok, const std::vector<int32_t>& ids) {
    StreamDecoder stream(tok);
    std::string text;
    for (int32_t id : ids) {
        const std::string piece = stream.push(id);
        EXPECT_EQ(utf8::find_invalid(piece), std::string::npos) << "piece of id " << id;
        text += piece;
    }
    return text + stream.flush();
}

TEST(StreamDecoder, HoldsSplitCharacterUntilComplete) {
    ANELM_REQUIRE_SHARED("tokenizers/gemma3/tokenizer.json");
    const Tokenizer& tok = shared_tokenizer("gemma3");
    // U+20000 is not in Gemma's vocabulary: four <0xXX> byte tokens.
    const auto ids = tok.encode(
        "a\xF0\xA0\x80\x80"
        "b",
        false);
    ASSERT_EQ(ids.size(), 6u);
    StreamDecoder stream(tok);
    EXPECT_EQ(stream.push(ids[0]), "a");
    EXPECT_EQ(stream.push(ids[1]), "");
    EXPECT_EQ(stream.push(ids[2]), "");
    EXPECT_EQ(stream.push(ids[3]), "");
    EXPECT_EQ(stream.push(ids[4]), "\xF0\xA0\x80\x80");
    EXPECT_EQ(stream.push(ids[5]), "b");
    EXPECT_EQ(stream.flush(), "");
}

TEST(StreamDecoder, GarbageBytesAreNotHeldForever) {
    ANELM_REQUIRE_SHARED("tokenizers/llama3/tokenizer.json");
    const Tokenizer& tok = shared_tokenizer("llama3");
    // "â" stands for byte 0xE2 in byte-level vocabularies: each id opens a new
    // three-byte character that never completes.
    const int32_t lead = tok.token_to_id("\xC3\xA2");
    ASSERT_GE(lead, 0);
    StreamDecoder stream(tok);
    std::string text;
    for (int k = 0; k < 20; ++k) {
        const std::string piece = stream.push(lead);
        EXPECT_EQ(utf8::find_invalid(piece), std::string::npos);
        text += piece;
    }
    EXPECT_FALSE(text.empty());
    text += stream.flush();
    EXPECT_EQ(text, tok.decode(std::vector<int32_t>(20, lead)));
}

TEST(StreamDecoder, FlushGivesCutOffCharacterAsHuggingFaceDecodes) {
    ANELM_REQUIRE_SHARED("tokenizers/llama3/tokenizer.json");
    const Tokenizer& tok = shared_tokenizer("llama3");
    const auto ids = tok.encode("\xE2\x82\xAC", false);  // €
    StreamDecoder stream(tok);
    std::string text;
    for (size_t k = 0; k + 1 < ids.size(); ++k) text += stream.push(ids[k]);
    text += stream.flush();
    const std::vector<int32_t> cut(ids.begin(), ids.end() - 1);
    EXPECT_EQ(text, tok.decode(cut));
}

TEST(StreamDecoder, LongGenerationStaysEqual) {
    ANELM_REQUIRE_SHARED("tokenizers/qwen3/tokenizer.json");
    const Tokenizer& tok = shared_tokenizer("qwen3");
    std::string text;
    for (int k = 0; k < 200; ++k)
        text += "Step " + std::to_string(k) +
                ": \xE4\xBD\xA0\xE5\xA5\xBD, w\xC3\xB6rld \xF0\x9F\x98\x80\n";
    const auto ids = tok.encode(text, true);
    EXPECT_EQ(stream_all(tok, ids), text);
}

}  // namespace
}  // namespace anelm::test
