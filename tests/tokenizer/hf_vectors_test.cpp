// Every vector of shared/tokenizers/*/hf-tokenizers-vectors.jsonl, made with
// Hugging Face's tokenizers: encode with and without special tokens, decode,
// and decode with special tokens skipped. Streaming the ids one by one must
// give the same text as decoding them at once.
#include <gtest/gtest.h>

#include <iostream>

#include "tokenizer/utf8.h"
#include "tokenizer_fixtures.h"

namespace anelm::test {
namespace {

class HfVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(HfVectors, MatchHuggingFace) {
    const std::string rel = "tokenizers/" + GetParam() + "/hf-tokenizers-vectors.jsonl";
    ANELM_REQUIRE_SHARED(rel);
    const Tokenizer& tok = shared_tokenizer(GetParam());
    const auto rows = read_jsonl(shared_path(rel));
    ASSERT_FALSE(rows.empty());
    size_t passed = 0;
    for (const auto& row : rows) {
        const std::string input = row["input"];
        const auto ids = row["ids"].get<std::vector<int32_t>>();
        const auto with_special = row["ids_with_special"].get<std::vector<int32_t>>();
        std::vector<int32_t> unspecial;
        for (int32_t id : ids)
            if (!tok.is_special(id)) unspecial.push_back(id);
        const bool ok_ids = tok.encode(input, false) == ids;
        const bool ok_special = tok.encode(input, true) == with_special;
        const bool ok_decoded = tok.decode(ids) == row["decoded"].get<std::string>();
        const bool ok_skip =
            tok.decode(unspecial) == row["decoded_skip_special"].get<std::string>();
        EXPECT_TRUE(ok_ids) << "ids of " << row["input"].dump();
        EXPECT_TRUE(ok_special) << "ids_with_special of " << row["input"].dump();
        EXPECT_TRUE(ok_decoded) << "decoded of " << row["input"].dump();
        EXPECT_TRUE(ok_skip) << "decoded_skip_special of " << row["input"].dump();
        passed += ok_ids && ok_special && ok_decoded && ok_skip;

        StreamDecoder stream(tok);
        std::string streamed;
        for (int32_t id : with_special) {
            const std::string piece = stream.push(id);
            EXPECT_EQ(utf8::find_invalid(piece), std::string::npos) << row["input"].dump();
            streamed += piece;
        }
        streamed += stream.flush();
        EXPECT_EQ(streamed, tok.decode(with_special)) << "stream of " << row["input"].dump();
    }
    std::cout << rel << ": " << passed << "/" << rows.size() << " vectors pass\n";
}

INSTANTIATE_TEST_SUITE_P(Models, HfVectors, ::testing::Values("qwen3", "llama3", "gemma3"));

}  // namespace
}  // namespace anelm::test

namespace anelm::test {
namespace {

struct SpecialIds {
    const char* model;
    int32_t bos;
    int32_t eos;  // tokenizer_config.json's eos_token
    int32_t n_vocab;
};

class HfSpecialIds : public ::testing::TestWithParam<SpecialIds> {};

TEST_P(HfSpecialIds, FromPostProcessorAndConfig) {
    const std::string model = GetParam().model;
    ANELM_REQUIRE_SHARED("tokenizers/" + model + "/tokenizer.json");
    const Tokenizer& tok = shared_tokenizer(model);
    EXPECT_EQ(tok.bos_id(), GetParam().bos);
    EXPECT_EQ(tok.eos_ids(), std::vector<int32_t>{GetParam().eos});
    EXPECT_EQ(tok.n_vocab(), GetParam().n_vocab);
    EXPECT_TRUE(tok.is_special(GetParam().eos));
    EXPECT_EQ(tok.token_to_id(tok.token_to_piece(GetParam().eos)), GetParam().eos);
}

INSTANTIATE_TEST_SUITE_P(Models, HfSpecialIds,
                         ::testing::Values(SpecialIds{"qwen3", -1, 151645, 151669},
                                           SpecialIds{"llama3", 128000, 128009, 128256},
                                           SpecialIds{"gemma3", 2, 106, 262145}),
                         [](const auto& info) { return std::string(info.param.model); });

}  // namespace
}  // namespace anelm::test
