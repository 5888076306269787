// `anelm convert` on a vocabulary of 650, which neither the LM head's 8 pieces
// nor its LUT groups divide: the default --lut-head 6,8 and other widths and
// groups (embeddings and layers too, argmax in the model) convert, lint clean,
// keep every logits output at the first piece's rows, and generate the tokens
// the CPU generates from the same LUTs (--quant, in either spelling).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "run_anelm.h"
#include "synth/synth.h"
#include "test_support.h"

namespace anelm {
namespace {

namespace fs = std::filesystem;

std::string quoted(const fs::path& p) {
    return "'" + p.string() + "'";
}

const fs::path& model_650() {
    static const fs::path dir = [] {
        SynthPreset preset = synth_preset("tiny-llama");
        preset.spec.n_vocab = 650;
        const fs::path d = test::temp_dir("cli-lut-padding-model") / "model";
        SynthOptions options;
        options.seed = 13;
        synth_write(preset, d.string(), options);
        return d;
    }();
    return dir;
}

struct Case {
    const char* name;
    std::string convert_args;  // LUT options of anelm convert
    std::string quant;         // the same LUTs as --quant spells them
    std::vector<int64_t> pieces;
};

class LutPaddingCli : public testing::TestWithParam<Case> {};

TEST_P(LutPaddingCli, ConvertsAndGeneratesTheCpuTokens) {
    const Case& c = GetParam();
    const fs::path out = test::temp_dir(std::string("cli-lut-padding-") + c.name) / "out";
    const auto r = test::run_anelm("convert " + quoted(model_650()) + " -o " + quoted(out) +
                                   " --ctx 64 --batch 16 -t 2" + c.convert_args);
    ASSERT_EQ(r.exit_code, 0) << r.err;

    const auto info = test::run_anelm("info " + quoted(out) + " --json");
    ASSERT_EQ(info.exit_code, 0) << info.err;
    const auto j = nlohmann::json::parse(info.out);
    EXPECT_EQ(j["lm_head_chunk_sizes"], nlohmann::json(c.pieces));
    const bool argmax = j["argmax_in_model"].get<bool>();
    const auto& head = j["packages"].back()["functions"][0]["outputs"];
    if (argmax) {
        EXPECT_EQ(head[0]["name"], "argmax_idx");
        EXPECT_EQ(head[0]["shape"], nlohmann::json({int64_t(c.pieces.size())}));
    } else {
        ASSERT_EQ(head.size(), c.pieces.size());
        for (const auto& logits : head)  // every piece at the first one's rows
            EXPECT_EQ(logits["shape"], nlohmann::json({1, 1, c.pieces[0]})) << logits;
    }

    const auto lint = test::run_anelm("lint " + quoted(out) + " --json");
    const auto lj = nlohmann::json::parse(lint.out);
    EXPECT_EQ(lj["summary"]["errors"], 0) << lint.out;
    // A LUT on the embeddings is lint's one warning.
    const bool lut_embed = c.convert_args.find("--lut-embed") != std::string::npos;
    EXPECT_EQ(lj["summary"]["warnings"], lut_embed ? 1 : 0) << lint.out;

    const std::string args = " -p 'the quick brown fox jumps over the lazy dog' -n 48 --temp 0";
    const auto cpu = test::run_anelm("generate " + quoted(model_650()) + args + " --quant '" +
                                     c.quant + "' --precision ane --ctx 64");
    ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
    const auto ane = test::run_anelm("generate " + quoted(out) + args);
    ASSERT_EQ(ane.exit_code, 0) << ane.err;
    EXPECT_NE(ane.err.find("MIL interpreter"), std::string::npos) << ane.err;
    EXPECT_EQ(ane.out, cpu.out);
}

INSTANTIATE_TEST_SUITE_P(
    Cli, LutPaddingCli,
    testing::Values(
        // The defaults (--lut-ffn 4,8 --lut-head 6,8): 88-row pieces, the last 34 rows.
        Case{"defaults", "", "ffn=4,8,head=6:8", {88, 88, 88, 88, 88, 88, 88, 34}},
        Case{"colon",
             " --lut-ffn 4:8 --lut-head 4:16 --argmax",
             "ffn=4:8,head=4,16",
             {96, 96, 96, 96, 96, 96, 74}},
        Case{"odd_groups",
             " --lut-embed 8,7 --lut-ffn 6,6 --lut-head 2,3",
             "embed=8,7,ffn=6,6,head=2:3",
             {84, 84, 84, 84, 84, 84, 84, 62}}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace anelm
