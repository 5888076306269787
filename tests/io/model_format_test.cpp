#include "io/model_format.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <vector>

#include "io/io_test_util.h"

namespace anelm {
namespace {

using test::expect_error;

constexpr std::string_view expected =
    "(expected a Hugging Face folder, a GGUF file or a llama2.c checkpoint)";

// llama2.c's header: dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len.
std::string llama2c_header(std::array<int32_t, 7> fields) {
    std::string out(sizeof fields, '\0');
    std::memcpy(out.data(), fields.data(), sizeof fields);
    return out;
}

// llama2.c's tokenizer.bin: max_token_length, then (score, length, bytes) per piece.
std::string llama2c_tokenizer(const std::vector<std::string>& pieces) {
    std::string out(4, '\0');
    const int32_t max_len = 8;
    std::memcpy(out.data(), &max_len, 4);
    for (const std::string& piece : pieces) {
        const float score = -1.5f;
        const auto len = static_cast<int32_t>(piece.size());
        out.append(reinterpret_cast<const char*>(&score), 4);
        out.append(reinterpret_cast<const char*>(&len), 4);
        out += piece;
    }
    return out;
}

class ModelFormatTest : public test::ScratchDir {
protected:
    std::string write(const std::string& name, const std::string& bytes) {
        test::write_file(path(name), bytes);
        return path(name);
    }
    std::string folder(const std::string& name, const std::string& file) {
        std::filesystem::create_directories(dir_ / name);
        if (!file.empty()) test::write_file(path(name + "/" + file), "{}");
        return path(name);
    }
};

TEST_F(ModelFormatTest, RecognisesFolders) {
    EXPECT_EQ(detect_model_format(folder("hf", "config.json")), ModelFormat::hf_folder);
    EXPECT_EQ(detect_model_format(folder("converted", "meta.yaml")), ModelFormat::converted_folder);
    EXPECT_EQ(detect_model_format(folder("m.mlpackage", "Manifest.json")),
              ModelFormat::coreml_package);
}

TEST_F(ModelFormatTest, RecognisesFilesByTheirBytes) {
    EXPECT_EQ(detect_model_format(write("weights", "GGUF\x03\0\0\0")), ModelFormat::gguf);
    // A header of sizes in range is a checkpoint, cut short or not: the loader
    // then says how long it should be.
    EXPECT_EQ(detect_model_format(write("x.dat", llama2c_header({64, 172, 5, 8, 4, 512, 512}))),
              ModelFormat::llama2c);
}

TEST_F(ModelFormatTest, NamesWhatItWasGivenInstead) {
    const std::string readme = write("README.md", "# stories\nA tiny model.\n");
    expect_error([&] { detect_model_format(readme); },
                 {readme + ": not a model file but text", expected});
    const std::string tokenizer =
        write("tokenizer.json", R"({"version": "1.0", "model": {"type": "BPE", "vocab": {}}})");
    expect_error([&] { detect_model_format(tokenizer); },
                 {tokenizer + ": not a model file but a tokenizer", expected});
    const std::string json = write("messages.json", R"([{"role": "user"}])");
    expect_error([&] { detect_model_format(json); },
                 {json + ": not a model file but JSON", expected});
    const std::string tok_bin = write("tok.bin", llama2c_tokenizer({"<unk>", "a", "", "hello"}));
    expect_error([&] { detect_model_format(tok_bin); },
                 {tok_bin + ": not a model file but a llama2.c tokenizer", expected});
    const std::string empty = write("empty.bin", "");
    expect_error([&] { detect_model_format(empty); }, {empty + ": not a model file but an empty"});
    // Bytes that are none of these: a header out of range, too short for one.
    for (const std::string& bytes :
         {llama2c_header({1851858979, 2, 3, 4, 5, 6, 7}), std::string("\x01\x02\x03\x00", 4),
          llama2c_header({64, 172, 5, 7, 4, 512, 512})}) {
        const std::string garbage = write("garbage.bin", bytes);
        expect_error([&] { detect_model_format(garbage); },
                     {garbage + ": not a model file " + std::string(expected)});
    }
}

TEST_F(ModelFormatTest, NamesFoldersAndFilesOfAModel) {
    const std::string bare = folder("bare", "tokenizer.json");
    expect_error([&] { detect_model_format(bare); },
                 {bare + ": no config.json in this folder", expected});
    test::write_file(path("bare/model.gguf"), "GGUF\x03\0\0\0");
    expect_error([&] { detect_model_format(bare); }, {"it holds model.gguf"});
    // Any file beside a config.json is one of a model's files.
    const std::string hf = folder("hf", "config.json");
    for (const char* name : {"model.safetensors", "tokenizer.json", "README.md"}) {
        test::write_file(hf + "/" + name, "{}");
        expect_error([&] { detect_model_format(hf + "/" + name); },
                     {hf + "/" + name + ": give the model's folder (with config.json)"});
    }
    expect_error([&] { detect_model_format(path("absent")); },
                 {path("absent") + ": no such file or folder"});
}

TEST_F(ModelFormatTest, TellsTextFromBinary) {
    EXPECT_TRUE(is_text_file(write("t.jinja", "{% for m in messages %}\t{{ m }}\r\n{% endfor %}")));
    EXPECT_TRUE(is_text_file(write("utf8.txt", "caf\xc3\xa9")));
    EXPECT_FALSE(is_text_file(write("h.bin", llama2c_header({64, 172, 5, 8, 4, 512, 512}))));
    EXPECT_FALSE(is_text_file(write("esc.txt", "text\x1b[0m")));
}

}  // namespace
}  // namespace anelm
