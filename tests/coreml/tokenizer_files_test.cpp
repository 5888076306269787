// Copying the tokenizer files of a Hugging Face folder beside meta.yaml.
#include "coreml/tokenizer_files.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "io/io_test_util.h"

namespace anelm::coreml {
namespace {

namespace fs = std::filesystem;
using test::expect_error;
using test::read_file;
using test::write_file;

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

}  // namespace
}  // namespace anelm::coreml
