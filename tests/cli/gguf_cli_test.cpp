// A GGUF file through the commands, end to end: a tiny Qwen3 written as GGUF
// with its tokenizer and chat template in the metadata generates and converts
// as its Hugging Face folder does; a damaged file is one line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/model_loader.h"
#include "run_anelm.h"
#include "runtime/gguf_from_hf.h"
#include "synth/synth.h"
#include "test_support.h"

namespace anelm {
namespace {

namespace fs = std::filesystem;

struct Files {
    fs::path folder, gguf;
};

// The folder and its GGUF (F32 matrices, so both compute the same), once.
const Files& files() {
    static const Files f = [] {
        const fs::path base = test::temp_dir("cli-gguf");
        Files out{base / "tiny-qwen3", base / "tiny-qwen3.gguf"};
        synth_write("tiny-qwen3", out.folder.string(), DType::f32, 5);
        test::write_gguf_from_hf(load_model(out.folder.string()), out.gguf.string(),
                                 test::GgufMatrixType::f32, out.folder);
        return out;
    }();
    return f;
}

std::string quoted(const fs::path& p) {
    return "'" + p.string() + "'";
}

TEST(CliGguf, GeneratesAsTheHuggingFaceFolder) {
    const std::string args = " -p 'the quick brown fox' -n 40 --temp 0 -t 2";
    const auto want = test::run_anelm("generate " + quoted(files().folder) + args);
    ASSERT_EQ(want.exit_code, 0) << want.err;
    const auto got = test::run_anelm("generate " + quoted(files().gguf) + args);
    ASSERT_EQ(got.exit_code, 0) << got.err;
    EXPECT_EQ(got.out, want.out);

    // The chat template comes from tokenizer.chat_template.
    const auto chat = test::run_anelm("generate " + quoted(files().gguf) + args + " --chat");
    ASSERT_EQ(chat.exit_code, 0) << chat.err;
    const auto chat_want = test::run_anelm("generate " + quoted(files().folder) + args + " --chat");
    EXPECT_EQ(chat.out, chat_want.out);
}

TEST(CliGguf, InfoNamesTheStoredTypes) {
    const auto r = test::run_anelm("info " + quoted(files().gguf));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("architecture   qwen3"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("F32"), std::string::npos) << r.out;
}

TEST(CliGguf, ConvertsWithItsTokenizer) {
    const fs::path out = test::temp_dir("cli-gguf-convert") / "out";
    const auto r = test::run_anelm("convert " + quoted(files().gguf) + " -o " + quoted(out) +
                                   " --lut-ffn none --lut-head none --ctx 64 --batch 16 -t 2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(fs::exists(out / "tokenizer.json"));
    EXPECT_TRUE(fs::exists(out / "tokenizer_config.json"));
    const std::string args = " -p 'the quick brown fox' -n 24 --temp 0 --precision ane -t 2";
    const auto want = test::run_anelm("generate " + quoted(files().gguf) + args);
    const auto got = test::run_anelm("generate " + quoted(out) + args);
    ASSERT_EQ(got.exit_code, 0) << got.err;
    EXPECT_EQ(got.out, want.out);
}

TEST(CliGguf, DamagedFileIsOneLineAndConvertWritesNothing) {
    const fs::path dir = test::temp_dir("cli-gguf-bad");
    const fs::path cut = dir / "cut.gguf";
    {
        std::ifstream in(files().gguf, std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() - 100);
    }
    const auto r = test::run_anelm("convert " + quoted(cut) + " -o " + quoted(dir / "out"));
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find(cut.string() + ": truncated: tensor "), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(dir / "out"));
}

}  // namespace
}  // namespace anelm
