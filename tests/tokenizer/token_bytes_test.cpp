// token_bytes against decode: the bytes of every id, joined, are the decoded text of
// a sequence that is not at its start, for all four kinds of tokenizer.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "llama2c_cases.h"
#include "tokenizer/utf8.h"
#include "tokenizer_fixtures.h"

namespace anelm::test {
namespace {

std::string joined_bytes(const Tokenizer& tok, std::span<const int32_t> ids) {
    std::string out;
    for (int32_t id : ids) out += tok.token_bytes(id);
    return out;
}

// Every id alone, then random runs of ids without BOS (llama2.c drops the space
// after it): wherever decoding gives valid UTF-8 (a run may cut a character), it
// equals the joined bytes.
void expect_matches_decode(const Tokenizer& tok) {
    size_t compared = 0;
    for (int32_t id = 0; id < tok.n_vocab(); ++id) {
        const std::string bytes = tok.token_bytes(id);
        if (utf8::find_invalid(bytes) != std::string::npos) continue;
        ASSERT_EQ(bytes, tok.decode_window(std::span<const int32_t>(&id, 1), false, false))
            << "id " << id;
        ++compared;
    }
    EXPECT_GT(compared, static_cast<size_t>(tok.n_vocab()) * 9 / 10);
    std::mt19937 rng(7);
    std::uniform_int_distribution<int32_t> any_id(0, tok.n_vocab() - 1);
    for (int k = 0; k < 2000; ++k) {
        std::vector<int32_t> ids(1 + k % 12);
        for (int32_t& id : ids) id = any_id(rng);
        if (std::find(ids.begin(), ids.end(), tok.bos_id()) != ids.end()) continue;
        const std::string bytes = joined_bytes(tok, ids);
        if (utf8::find_invalid(bytes) != std::string::npos) continue;
        ASSERT_EQ(bytes, tok.decode_window(ids, false, false));
    }
}

// Encoded text that does not start with a space decodes, from its start, to the
// joined bytes.
void expect_round_trip(const Tokenizer& tok, const std::string& text) {
    const std::vector<int32_t> ids = tok.encode(text, false);
    EXPECT_EQ(joined_bytes(tok, ids), tok.decode(ids)) << text;
    EXPECT_EQ(joined_bytes(tok, ids), text);
}

class HfTokenBytes : public ::testing::TestWithParam<const char*> {};

TEST_P(HfTokenBytes, JoinedEqualDecode) {
    const std::string model = GetParam();
    ANELM_REQUIRE_SHARED("tokenizers/" + model + "/tokenizer.json");
    const Tokenizer& tok = shared_tokenizer(model);
    expect_matches_decode(tok);
    expect_round_trip(tok, "{\"name\": \"Zo\xC3\xAB\", \"tags\": [\"\xE6\x97\xA5\xE6\x9C\xAC\"]}");
    expect_round_trip(tok, "x = 12.5e-3;\n\tüñí 🙂 \\u00e9");
}

INSTANTIATE_TEST_SUITE_P(Shared, HfTokenBytes, ::testing::Values("qwen3", "llama3", "gemma3"));

TEST(TokenBytes, ByteLevelHandChecked) {
    ANELM_REQUIRE_SHARED("tokenizers/qwen3/tokenizer.json");
    const Tokenizer& tok = shared_tokenizer("qwen3");
    // "Ġ" is a space; a lone byte of a character stays a raw byte.
    EXPECT_EQ(tok.token_bytes(tok.token_to_id("\xC4\xA0the")), " the");
    EXPECT_EQ(tok.token_bytes(tok.token_to_id("\xC3\xA6")), "\xE6");
    EXPECT_EQ(tok.token_bytes(tok.token_to_id("{\"")), "{\"");
    EXPECT_EQ(tok.token_bytes(tok.token_to_id("<|im_end|>")), "<|im_end|>");
    EXPECT_EQ(tok.token_bytes(-1), "");
    EXPECT_EQ(tok.token_bytes(tok.n_vocab()), "");
}

TEST(TokenBytes, ByteFallbackHandChecked) {
    ANELM_REQUIRE_SHARED("tokenizers/gemma3/tokenizer.json");
    const Tokenizer& tok = shared_tokenizer("gemma3");
    // "▁" is a space even at the start; a <0xXX> piece is its byte, valid UTF-8 or not.
    EXPECT_EQ(tok.token_bytes(tok.token_to_id("\xE2\x96\x81the")), " the");
    EXPECT_EQ(tok.token_bytes(tok.token_to_id("<0x41>")), "A");
    EXPECT_EQ(tok.token_bytes(tok.token_to_id("<0xE6>")), "\xE6");
    EXPECT_EQ(tok.token_bytes(tok.token_to_id("<end_of_turn>")), "<end_of_turn>");
}

TEST(TokenBytes, Llama2cAsRunCPrints) {
    ANELM_REQUIRE_SHARED(tok512);
    const auto tok = load_tokenizer(shared_path(tok512).string());
    expect_matches_decode(*tok);
    // After any id but BOS a piece keeps its space; BOS and unprintable bytes print nothing.
    const std::vector<int32_t> ids = tok->encode("Once upon a time", false);
    EXPECT_EQ(joined_bytes(*tok, ids), " Once upon a time");
    EXPECT_EQ(tok->token_bytes(1), "");
    EXPECT_EQ(tok->token_bytes(3 + '\n'), "\n");
    EXPECT_EQ(tok->token_bytes(3 + 0x80), "");
    EXPECT_EQ(tok->token_bytes(2), tok->token_to_piece(2));
}

}  // namespace
}  // namespace anelm::test
