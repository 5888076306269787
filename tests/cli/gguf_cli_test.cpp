// A GGUF file through the commands, end to end: a tiny Qwen3 written as GGUF
// with its tokenizer and chat template in the metadata generates and converts
// as its Hugging Face folder does; a damaged file is one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "models/model_loader.h"
#include "run_anelm.h"
#include "runtime/gguf_from_hf.h"
#include "synth/synth.h"
#include "test_support.h"

namespace anelm {
namespace {

namespace fs = std::filesystem;

struct Files {
    fs::path folder, gguf, q8_0;
};

// The folder and its GGUF (F32 matrices, so both compute the same), and a
// Q8_0 GGUF of it, once.
const Files& files() {
    static const Files f = [] {
        const fs::path base = test::temp_dir("cli-gguf");
        Files out{base / "tiny-qwen3", base / "tiny-qwen3.gguf", base / "tiny-qwen3-q8_0.gguf"};
        synth_write("tiny-qwen3", out.folder.string(), DType::f32, 5);
        const LoadedModel hf = load_model(out.folder.string());
        test::write_gguf_from_hf(hf, out.gguf.string(), test::GgufMatrixType::f32, out.folder);
        test::write_gguf_from_hf(hf, out.q8_0.string(), test::GgufMatrixType::q8_0, out.folder);
        return out;
    }();
    return f;
}

std::string quoted(const fs::path& p) {
    // Appended, not "'" + ...: GCC 12 warns (-Wrestrict) on that concatenation.
    std::string s(1, '\'');
    s += p.string();
    s += '\'';
    return s;
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

// Blocks are decoded as they are written: the f16 packages compute what the
// GGUF computes in the ane precision, and convert reports each matrix's error
// against the file's own values.
TEST(CliGguf, ConvertsBlocksAndReportsTheErrorItAdds) {
    const fs::path dir = test::temp_dir("cli-gguf-blocks");
    const auto dense =
        test::run_anelm("convert " + quoted(files().q8_0) + " -o " + quoted(dir / "f16") +
                        " --lut-ffn none --lut-head none --ctx 64 --batch 16 -t 2");
    ASSERT_EQ(dense.exit_code, 0) << dense.err;
    EXPECT_NE(dense.out.find("model.layers.0.mlp.up_proj.weight"), std::string::npos) << dense.out;
    const std::string args = " -p 'the quick brown fox' -n 24 --temp 0 --precision ane -t 2";
    const auto want = test::run_anelm("generate " + quoted(files().q8_0) + args);
    const auto got = test::run_anelm("generate " + quoted(dir / "f16") + args);
    ASSERT_EQ(got.exit_code, 0) << got.err;
    EXPECT_EQ(got.out, want.out);

    const auto lut = test::run_anelm("convert " + quoted(files().q8_0) + " -o " +
                                     quoted(dir / "lut") + " --ctx 64 --batch 16 -t 2");
    ASSERT_EQ(lut.exit_code, 0) << lut.err;
    // One line per matrix: name, shape, stored type, written form, then
    // rel_rmse, cosine and max_abs; LUT4 adds a visible error, f16 almost none.
    const auto row = [&](const std::string& name) {
        const size_t at = lut.out.find(name + " ");
        EXPECT_NE(at, std::string::npos) << lut.out;
        std::istringstream line(lut.out.substr(at, lut.out.find('\n', at) - at));
        std::string n, shape, stored, written;
        double rel_rmse = -1, cosine = -1;
        line >> n >> shape >> stored >> written >> rel_rmse >> cosine;
        return std::make_tuple(stored, written, rel_rmse, cosine);
    };
    const auto [stored, written, rel, cos] = row("model.layers.1.mlp.down_proj.weight");
    EXPECT_EQ(stored, "Q8_0");
    EXPECT_EQ(written, "lut4:8");
    EXPECT_GT(rel, 0.01);
    EXPECT_LT(rel, 0.5);
    EXPECT_GT(cos, 0.9);
    const auto [e_stored, e_written, e_rel, e_cos] = row("model.embed_tokens.weight");
    EXPECT_EQ(e_written, "f16");
    EXPECT_LT(e_rel, 1e-3);
    EXPECT_NE(lut.out.find("total: "), std::string::npos);
    fs::remove_all(dir);
}

// quantize reads the blocks row by row: the bytes in are the file's own.
TEST(CliGguf, QuantizesBlocksAgain) {
    const auto r = test::run_anelm("quantize " + quoted(files().q8_0) + " --quant lut4 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto report = nlohmann::json::parse(r.out);
    const auto& tensors = report["tensors"];
    const auto down = std::find_if(tensors.begin(), tensors.end(), [](const auto& t) {
        return t["name"] == "model.layers.0.mlp.down_proj.weight";
    });
    ASSERT_NE(down, tensors.end()) << r.out;
    const auto& shape = (*down)["shape"];
    const int64_t numel = shape[0].get<int64_t>() * shape[1].get<int64_t>();
    EXPECT_EQ((*down)["bytes_in"], numel / 32 * 34);  // Q8_0: 34 bytes per 32 weights
    EXPECT_GT((*down)["cosine"].get<double>(), 0.9);
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
