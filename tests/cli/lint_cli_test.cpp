// `anelm lint` end to end: convert's own output is clean (exit 0) whether
// linted on disk or lowered in memory from the model; a state dimension the
// ANE rejects is an error (exit 1); LUT on the embeddings is a warning (exit 3).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "run_anelm.h"
#include "synth/synth.h"
#include "test_support.h"

namespace anelm {
namespace {

namespace fs = std::filesystem;

std::string quoted(const fs::path& p) {
    return "'" + p.string() + "'";
}

const fs::path& tiny_model(const std::string& preset) {
    static std::map<std::string, fs::path> paths;
    auto it = paths.find(preset);
    if (it == paths.end()) {
        static const fs::path base = test::temp_dir("cli-lint-model");
        const fs::path path = base / preset;
        synth_write(preset, path.string(), DType::bf16, 5);
        it = paths.emplace(preset, path).first;
    }
    return it->second;
}

const std::string small = " --ctx 64 --batch 16 --chunks 2 -t 2";

class LintTiny : public testing::TestWithParam<const char*> {};

TEST_P(LintTiny, ConvertedFolderIsClean) {
    const fs::path out = test::temp_dir("cli-lint") / "out";
    const auto c =
        test::run_anelm("convert " + quoted(tiny_model(GetParam())) + " -o " + quoted(out) + small);
    ASSERT_EQ(c.exit_code, 0) << c.err;
    const auto r = test::run_anelm("lint " + quoted(out));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("0 error(s), 0 warning(s)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("in 4 package(s)"), std::string::npos) << r.out;
    // One info line (op count) per function: embeddings, two chunks of two, LM head.
    EXPECT_NE(r.out.find("info ANE015 "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("error ANE"), std::string::npos) << r.out;
}

TEST_P(LintTiny, ModelLintedAsConvertWouldWriteItIsClean) {
    const auto r = test::run_anelm("lint " + quoted(tiny_model(GetParam())) + small + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["exit_code"], 0);
    EXPECT_EQ(j["packages"].size(), 4u);
    EXPECT_EQ(j["summary"]["errors"], 0);
    EXPECT_EQ(j["summary"]["warnings"], 0);
    // One per function: embeddings, LM head, and two chunks of infer and
    // prefill (Gemma 3, past its window of 8, also their two rotate forms).
    const bool rotates = std::string(GetParam()) == "tiny-gemma3";
    EXPECT_EQ(j["summary"]["info"], rotates ? 10 : 6);
    for (const auto& f : j["findings"]) {
        EXPECT_EQ(f["id"], "ANE015");
        EXPECT_FALSE(f["fix"].get<std::string>().empty());
        EXPECT_FALSE(f["fact"].get<std::string>().empty());
    }
}

INSTANTIATE_TEST_SUITE_P(Cli, LintTiny, testing::Values("tiny-llama", "tiny-qwen3", "tiny-gemma3"));

TEST(CliLint, StateDimensionIsAnErrorExit1) {
    // A context of 80 makes the KV state [4, 2, 80, 16]: 80 is neither a
    // power of two nor a multiple of 32.
    const auto r = test::run_anelm("lint " + quoted(tiny_model("tiny-llama")) +
                                   " --ctx 80 --batch 16 --chunks 2 -t 2");
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.out.find("error ANE001 llama_FFN_PF_lut4_chunk_01of02.mlpackage:infer:"
                         "model_model_kv_cache_0"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("[fact: ane-llm-notes.txt"), std::string::npos) << r.out;
}

TEST(CliLint, LutOnEmbeddingsIsAWarningExit3) {
    const auto r = test::run_anelm("lint " + quoted(tiny_model("tiny-llama")) + small +
                                   " --lut-embed 4 --json");
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["exit_code"], 3);
    EXPECT_EQ(j["summary"]["errors"], 0);
    EXPECT_EQ(j["summary"]["warnings"], 1);
    bool found = false;
    for (const auto& f : j["findings"])
        found |= f["id"] == "ANE014" && f["severity"] == "warning" && f["function"] == "main";
    EXPECT_TRUE(found) << r.out;
}

TEST(CliLint, BadTargetIsOneLineExit1) {
    const auto r = test::run_anelm("lint " + quoted(tiny_model("tiny-llama")) + " --target ios9");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--target"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace anelm
