// Copying the tokenizer files of a Hugging Face folder beside meta.yaml, and
// deriving the ones a runner needs that the folder lacks.
#include "anemll/tokenizer_files.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "io/io_test_util.h"
#include "test_support.h"

namespace anelm::anemll {
namespace {

namespace fs = std::filesystem;
using test::expect_error;
using test::read_file;
using test::write_file;

// Vocabulary out of id order, a piece that needs escaping, "Ġ" for the space.
std::string byte_level_json(const std::string& merges) {
    return "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"ab\": 3, \"a\": 0, \"\\u0120ab\": 4, "
           "\"b\": 1, \"\\\"q\": 5, \"\\u0120\": 2}, \"merges\": " +
           merges +
           "},\n \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": "
           "\"Split\"}, {\"type\": \"ByteLevel\"}]}, \"decoder\": {\"type\": \"ByteLevel\"}}";
}

const std::string expected_vocab = R"({"a":0,"b":1,"Ġ":2,"ab":3,"Ġab":4,"\"q":5})";
const std::string expected_merges = "#version: 0.2\na b\nĠ ab\n";

class TokenizerFilesTest : public test::ScratchDir {
protected:
    void SetUp() override {
        ScratchDir::SetUp();
        fs::create_directory(path("hf"));
        fs::create_directory(path("out"));
    }
};

TEST_F(TokenizerFilesTest, CopiesThePresentOnesOnly) {
    write_file(path("hf/tokenizer.json"), "{\"model\": {}}");
    write_file(path("hf/merges.txt"), "a b\n");
    write_file(path("hf/config.json"), "{\"model_type\": \"qwen3\"}");
    write_file(path("hf/model.safetensors"), "weights");
    write_file(path("out/config.json"), "stale");
    // Hugging Face's cache links snapshot files to blobs: the content is copied.
    write_file(path("blob"), "{\"eos_token\": \"</s>\"}");
    fs::create_symlink(path("blob"), path("hf/tokenizer_config.json"));

    const std::vector<std::string> copied = copy_tokenizer_files(path("hf"), path("out"));
    EXPECT_EQ(copied, (std::vector<std::string>{"tokenizer.json", "tokenizer_config.json",
                                                "merges.txt", "config.json"}));
    EXPECT_EQ(read_file(path("out/tokenizer.json")), "{\"model\": {}}");
    EXPECT_EQ(read_file(path("out/merges.txt")), "a b\n");
    EXPECT_EQ(read_file(path("out/config.json")), "{\"model_type\": \"qwen3\"}");
    EXPECT_FALSE(fs::is_symlink(path("out/tokenizer_config.json")));
    EXPECT_EQ(read_file(path("out/tokenizer_config.json")), "{\"eos_token\": \"</s>\"}");
    EXPECT_FALSE(fs::exists(path("out/model.safetensors")));
}

TEST_F(TokenizerFilesTest, ASentencePieceModelIsEnough) {
    write_file(path("hf/tokenizer.model"), "spm");
    EXPECT_EQ(copy_tokenizer_files(path("hf"), path("out")),
              std::vector<std::string>{"tokenizer.model"});
}

TEST_F(TokenizerFilesTest, RefusesAFolderWithoutATokenizer) {
    write_file(path("hf/config.json"), "{}");
    expect_error([&] { copy_tokenizer_files(path("hf"), path("out")); },
                 {path("hf"), "neither tokenizer.json nor tokenizer.model"});
    EXPECT_FALSE(fs::exists(path("out/config.json")));
    expect_error([&] { copy_tokenizer_files(path("absent"), path("out")); },
                 {path("absent"), "not a folder"});
    write_file(path("hf/tokenizer.json"), "{}");
    expect_error([&] { copy_tokenizer_files(path("hf"), path("no-out")); },
                 {path("hf/tokenizer.json"), "cannot copy to"});
}

// vocab.json and merges.txt derived from a byte-level BPE tokenizer.json, for
// the slow tokenizer ANEMLL's chat.py asks transformers for.
TEST_F(TokenizerFilesTest, DerivedFromStringOrPairMerges) {
    for (const std::string merges :
         {"[\"a b\", \"\\u0120 ab\"]", "[[\"a\", \"b\"], [\"\\u0120\", \"ab\"]]"}) {
        SCOPED_TRACE(merges);
        write_file(path("hf/tokenizer.json"), byte_level_json(merges));
        const auto files = byte_level_bpe_files(path("hf/tokenizer.json"));
        ASSERT_TRUE(files.has_value());
        EXPECT_EQ(files->vocab_json, expected_vocab);
        EXPECT_EQ(files->merges_txt, expected_merges);
    }
}

TEST_F(TokenizerFilesTest, WrittenBesideTheCopiesWhenAbsent) {
    write_file(path("hf/tokenizer.json"), byte_level_json("[\"a b\", \"\\u0120 ab\"]"));
    write_file(path("hf/config.json"), "{}");
    EXPECT_EQ(
        copy_tokenizer_files(path("hf"), path("out")),
        (std::vector<std::string>{"tokenizer.json", "vocab.json", "merges.txt", "config.json"}));
    EXPECT_EQ(read_file(path("out/vocab.json")), expected_vocab);
    EXPECT_EQ(read_file(path("out/merges.txt")), expected_merges);

    // The source's own files win; only the missing one is derived.
    write_file(path("hf/vocab.json"), "{\"own\": 0}");
    EXPECT_EQ(
        copy_tokenizer_files(path("hf"), path("out")),
        (std::vector<std::string>{"tokenizer.json", "vocab.json", "merges.txt", "config.json"}));
    EXPECT_EQ(read_file(path("out/vocab.json")), "{\"own\": 0}");
    EXPECT_EQ(read_file(path("out/merges.txt")), expected_merges);
}

TEST_F(TokenizerFilesTest, NoneForOtherTokenizers) {
    // SentencePiece-style BPE (Llama 2, Gemma): "▁" pieces, no ByteLevel.
    write_file(path("hf/tokenizer.json"),
               "{\"normalizer\": {\"type\": \"Replace\"}, \"pre_tokenizer\": null, \"decoder\": "
               "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"ByteFallback\"}]}, \"model\": "
               "{\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}");
    EXPECT_FALSE(byte_level_bpe_files(path("hf/tokenizer.json")).has_value());
    EXPECT_EQ(copy_tokenizer_files(path("hf"), path("out")),
              std::vector<std::string>{"tokenizer.json"});
    // WordPiece with a ByteLevel decoder is still not BPE.
    write_file(path("hf/tokenizer.json"),
               "{\"decoder\": {\"type\": \"ByteLevel\"}, \"model\": {\"type\": \"WordPiece\", "
               "\"vocab\": {\"a\": 0}}}");
    EXPECT_FALSE(byte_level_bpe_files(path("hf/tokenizer.json")).has_value());
}

TEST_F(TokenizerFilesTest, RefusesWhatTheFilesCannotHold) {
    write_file(path("hf/tokenizer.json"), byte_level_json("[[\"a b\", \"c\"]]"));
    expect_error([&] { byte_level_bpe_files(path("hf/tokenizer.json")); },
                 {path("hf/tokenizer.json"), "model.merges[0]", "space"});
    write_file(path("hf/tokenizer.json"), byte_level_json("[7]"));
    expect_error([&] { byte_level_bpe_files(path("hf/tokenizer.json")); },
                 {path("hf/tokenizer.json"), "model.merges[0]"});
    write_file(path("hf/tokenizer.json"), "{\"model\": ");
    expect_error([&] { copy_tokenizer_files(path("hf"), path("out")); },
                 {path("hf/tokenizer.json"), "not valid JSON"});
}

// The real files: every merge a line after the header, the whole vocabulary.
class RealBpeVocabFiles : public testing::TestWithParam<const char*> {};

TEST_P(RealBpeVocabFiles, HoldEveryMergeAndToken) {
    const std::string rel = fmt::format("tokenizers/{}/tokenizer.json", GetParam());
    ANELM_REQUIRE_SHARED(rel);
    const std::string path = test::shared_path(rel).string();
    const auto files = byte_level_bpe_files(path);
    ASSERT_TRUE(files.has_value());
    const auto source = nlohmann::json::parse(read_file(path));
    const auto& merges = source["model"]["merges"];

    const std::string& text = files->merges_txt;
    ASSERT_TRUE(text.starts_with("#version: 0.2\n"));
    ASSERT_TRUE(text.ends_with("\n"));
    EXPECT_EQ(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')), merges.size() + 1);
    const size_t first = text.find('\n') + 1;
    const std::string first_merge = text.substr(first, text.find('\n', first) - first);
    EXPECT_EQ(first_merge, merges[0].is_string() ? merges[0].get<std::string>()
                                                 : merges[0][0].get<std::string>() + " " +
                                                       merges[0][1].get<std::string>());

    const auto vocab = nlohmann::json::parse(files->vocab_json);
    EXPECT_EQ(vocab.size(), source["model"]["vocab"].size());
    EXPECT_EQ(vocab, source["model"]["vocab"]);
    EXPECT_TRUE(files->vocab_json.starts_with("{\"!\":0,\"\\\"\":1,"))
        << files->vocab_json.substr(0, 40);
}

INSTANTIATE_TEST_SUITE_P(Shared, RealBpeVocabFiles, testing::Values("qwen3", "llama3"));

}  // namespace
}  // namespace anelm::anemll
