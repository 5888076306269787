// `anelm doctor` and `--fp16-scale` end to end on tiny synthesized models.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "run_anelm.h"
#include "synth/synth.h"
#include "test_support.h"

namespace anelm {
namespace {

const std::string& tiny_model(const std::string& preset) {
    static std::map<std::string, std::string> paths;
    auto it = paths.find(preset);
    if (it == paths.end()) {
        const auto path = (test::temp_dir("cli-doctor") / preset).string();
        synth_write(preset, path, DType::f32, 7);
        it = paths.emplace(preset, path).first;
    }
    return it->second;
}

TEST(CliDoctor, JsonAndHtmlReport) {
    const auto report = test::temp_dir("cli-doctor-report") / "report.html";
    const auto r = test::run_anelm("doctor '" + tiny_model("tiny-gemma3") +
                                   "' -n 16 -t 2 --json --report '" + report.string() + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["schema"], "anelm.doctor/1");
    EXPECT_EQ(j["device_precision"], "ane");
    EXPECT_EQ(j["prompts"].size(), 4u);  // the built-in calibration set
    EXPECT_EQ(j["alpha"], 1.0);
    EXPECT_EQ(j["layers"].size(), 2u);
    EXPECT_NE(r.err.find("doctor ["), std::string::npos) << r.err;  // the progress bar
    std::ifstream in(report);
    const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
    EXPECT_NE(html.find("</svg>"), std::string::npos);
}

TEST(CliDoctor, PromptsFileOfLines) {
    const auto file = test::temp_dir("cli-doctor-prompts") / "prompts.txt";
    std::ofstream(file) << "first prompt\n\nsecond prompt\n";
    const auto r = test::run_anelm("doctor '" + tiny_model("tiny-llama") + "' --prompts '" +
                                   file.string() + "' -t 2 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["prompts"], nlohmann::json({"prompt 1", "prompt 2"}));
}

// Scaling the residual stream by a power of two leaves f32 generation unchanged.
TEST(CliFp16Scale, SameTokensInF32) {
    const std::string base =
        "generate '" + tiny_model("tiny-llama") + "' -p 'Once upon' -n 16 --temp 0 -t 2";
    const auto plain = test::run_anelm(base);
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    for (const char* scale : {"0.125", "auto"}) {
        const auto scaled = test::run_anelm(base + " --fp16-scale " + scale);
        ASSERT_EQ(scaled.exit_code, 0) << scaled.err;
        EXPECT_EQ(scaled.out, plain.out) << scale;
    }
}

TEST(CliFp16Scale, NotAPowerOfTwoIsOneLineError) {
    const auto r =
        test::run_anelm("generate '" + tiny_model("tiny-llama") + "' -p hi --fp16-scale 0.3");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--fp16-scale"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace anelm
