// --quant on the commands that run a model, and `anelm perplexity`, on a tiny
// synthesized model.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "run_anelm.h"
#include "synth/synth.h"
#include "test_support.h"

namespace anelm {
namespace {

struct TinyFiles {
    std::string model, text;
};

const TinyFiles& tiny_files() {
    static const TinyFiles files = [] {
        const auto dir = test::temp_dir("cli-quant");
        TinyFiles f{(dir / "tiny-qwen3").string(), (dir / "text.txt").string()};
        synth_write("tiny-qwen3", f.model, DType::f32, 7);
        std::ofstream text(f.text);
        for (int i = 0; i < 60; ++i)
            text << "Once upon a time " << i << " a little dog ran to the park and saw a cat.\n";
        return f;
    }();
    return files;
}

size_t lines(const std::string& s) {
    return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

TEST(CliQuant, BenchReportsTheSpec) {
    const auto r = test::run_anelm("bench '" + tiny_files().model +
                                   "' --quant lut4 -p 8 -n 4 -r 1 -t 2 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["quant"], "embed=none,ffn=4:8,head=6:8");
    EXPECT_GT(j["tg_tok_s"].get<double>(), 0);
    EXPECT_NE(r.err.find("quantize ["), std::string::npos) << r.err;
}

// -d as llama-bench's: each test starts with that many tokens in the
// context; the tests are labelled so, a list measures each depth, and past
// the trained length it is refused.
TEST(CliQuant, BenchAtDepth) {
    const std::string bench = "bench '" + tiny_files().model + "' -p 8 -n 4 -r 2 -t 2 --kv q8";
    auto r = test::run_anelm(bench + " -d 100 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["n_depth"], 100);
    EXPECT_EQ(j["kv"], "q8");
    EXPECT_GT(j["pp_tok_s"].get<double>(), 0);
    EXPECT_GT(j["tg_tok_s"].get<double>(), 0);
    r = test::run_anelm(bench + " -d 100");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("pp8 @ d100"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("tg4 @ d100"), std::string::npos) << r.out;
    // A list: one set of tests per depth, in the order given, one object each.
    r = test::run_anelm(bench + " -d 0,100,40 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto all = nlohmann::json::parse(r.out);
    ASSERT_TRUE(all.is_array()) << r.out;
    ASSERT_EQ(all.size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
        EXPECT_EQ(all[k]["n_depth"], std::vector<int>({0, 100, 40})[k]);
        EXPECT_GT(all[k]["tg_tok_s"].get<double>(), 0);
    }
    r = test::run_anelm(bench + " -d 0,100");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("| tg4 "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("tg4 @ d100"), std::string::npos) << r.out;
    r = test::run_anelm(bench + " -d 100,100000");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("trained context"), std::string::npos) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
}

TEST(CliQuant, GenerateRunsQuantized) {
    for (const char* spec : {"int8", "lut4,embed=8,min=0"}) {
        const auto r =
            test::run_anelm("generate '" + tiny_files().model +
                            "' -p 'Once upon' -n 12 --temp 0 -t 2 --quant '" + spec + "'");
        ASSERT_EQ(r.exit_code, 0) << spec << ": " << r.err;
        EXPECT_EQ(r.out.rfind("Once upon", 0), 0u) << r.out;
    }
}

TEST(CliQuant, BadSpecIsOneLineError) {
    const auto r = test::run_anelm("generate '" + tiny_files().model + "' -p hi --quant ffn=5:8");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("ffn=5:8"), std::string::npos) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
}

std::string file_text(const std::string& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), {}};
}

// The recipe goes out as Apple's coreai-opt YAML; a second run replaces the
// file it wrote, and a file it did not write is refused untouched.
TEST(CliQuant, CoreAiConfigWritesTheWidthsAndReplacesItsOwnFile) {
    const std::string yaml = (test::temp_dir("cli-coreai") / "compression.yaml").string();
    std::filesystem::remove(yaml);
    const std::string cmd = "quantize '" + tiny_files().model +
                            "' --quant ffn=4:8,head=6:8,min=0 --coreai-config '" + yaml + "'";
    auto r = test::run_anelm(cmd);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::string text = file_text(yaml);
    EXPECT_NE(text.find("kmeans_palettization_config:"), std::string::npos) << text;
    EXPECT_NE(text.find("n_bits: 4"), std::string::npos) << text;

    r = test::run_anelm(cmd + " --coreai-platform macos");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    text = file_text(yaml);
    EXPECT_NE(text.find("quantization_config:"), std::string::npos) << text;
    EXPECT_NE(text.find("dtype: int4"), std::string::npos) << text;

    { std::ofstream(yaml) << "mine\n"; }
    r = test::run_anelm(cmd);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_EQ(file_text(yaml), "mine\n");
}

TEST(CliPerplexity, KlBaseAgainstItselfIsZero) {
    const auto r =
        test::run_anelm("perplexity '" + tiny_files().model + "' -f '" + tiny_files().text +
                        "' --ctx 32 --chunks 3 -t 2 --quant none --kl-base --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["n_windows"], 3);
    EXPECT_EQ(j["n_scored"], 3 * 15);
    EXPECT_EQ(j["kl_mean"], 0.0);
    EXPECT_EQ(j["top1"], 1.0);
    EXPECT_EQ(j["perplexity"], j["base_perplexity"]);
}

TEST(CliPerplexity, QuantizedTextReport) {
    const auto r = test::run_anelm("perplexity '" + tiny_files().model + "' -f '" +
                                   tiny_files().text + "' --ctx 32 -t 2 --quant lut4 --kl-base");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("KL(base || quantized)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("top-1 agreement"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("perplexity ["), std::string::npos) << r.err;
}

double kl_mean(const std::string& options) {
    const auto r = test::run_anelm(
        "perplexity '" + tiny_files().model + "' -f '" + tiny_files().text +
        "' --ctx 32 --chunks 2 -t 2 --quant int8,min=0 --kl-base --json " + options);
    EXPECT_EQ(r.exit_code, 0) << options << ": " << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out)["kl_mean"].get<double>() : -1;
}

// Prefill calls of 8 tokens take the decode path of the quantized products,
// where --quant-dot chooses; the exact products give the same divergence in
// calls of 8 tokens and in whole windows, up to the order of their sums.
TEST(CliPerplexity, BatchAndQuantDotChooseThePath) {
    const double int8_dot = kl_mean("-b 8 --quant-dot int8");
    const double exact_dot = kl_mean("-b 8 --quant-dot exact");
    EXPECT_GT(int8_dot, 0);
    EXPECT_GT(exact_dot, 0);
    EXPECT_NE(int8_dot, exact_dot);
    EXPECT_NEAR(kl_mean("--quant-dot exact"), exact_dot, 1e-3 * exact_dot);

    const auto bad = test::run_anelm("bench '" + tiny_files().model +
                                     "' --quant int8 --quant-dot int4 -p 8 -n 4 -r 1");
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("--quant-dot"), std::string::npos) << bad.err;
}

TEST(CliPerplexity, KlBaseWithoutQuantIsOneLineError) {
    const auto r = test::run_anelm("perplexity '" + tiny_files().model + "' -f '" +
                                   tiny_files().text + "' --kl-base");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--quant"), std::string::npos) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_TRUE(r.out.empty());
}

}  // namespace
}  // namespace anelm
