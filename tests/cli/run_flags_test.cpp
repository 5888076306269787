// What generate, chat and serve make of their flags: -n counts new tokens and
// --steps run.c's, the seed is drawn unless given, the model's
// generation_config.json fills the sampling flags left out, numbers out of range
// and mistyped flags are refused with one line, and --ctx past the model's
// trained length is said.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "run_anelm.h"
#include "synth/synth.h"
#include "test_support.h"

namespace anelm {
namespace {

namespace fs = std::filesystem;

const std::string& tiny_qwen3() {
    static const std::string path = [] {
        const auto p = (test::temp_dir("cli-run-flags") / "tiny-qwen3").string();
        synth_write("tiny-qwen3", p, DType::bf16, 7);
        return p;
    }();
    return path;
}

// The number in "generation: N tokens" of generate's speed line.
int generated_tokens(const std::string& err) {
    std::smatch m;
    if (!std::regex_search(err, m, std::regex("generation: ([0-9]+) tokens"))) return -1;
    return std::stoi(m[1]);
}

const std::string long_prompt =
    "'one two three four five six seven eight nine ten eleven twelve thirteen fourteen'";

TEST(RunFlags, NCountsNewTokensWhateverThePromptsLength) {
    for (const int n : {1, 5, 12}) {
        const auto r = test::run_anelm("generate '" + tiny_qwen3() + "' -p " + long_prompt +
                                       " -n " + std::to_string(n) + " --temp 0 -t 2");
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(generated_tokens(r.err), n) << r.err;
    }
}

TEST(RunFlags, StepsCountThePromptAsRunCDoes) {
    // The prompt's tokens count towards --steps: fewer steps than the prompt
    // has tokens still emit the one token sampled after it, as run.c does.
    const auto few = test::run_anelm("generate '" + tiny_qwen3() + "' -p " + long_prompt +
                                     " --steps 3 --temp 0 -t 2");
    ASSERT_EQ(few.exit_code, 0) << few.err;
    EXPECT_EQ(generated_tokens(few.err), 1) << few.err;
    const auto both = test::run_anelm("generate '" + tiny_qwen3() + "' -p hi -n 4 --steps 8");
    EXPECT_NE(both.exit_code, 0);
    EXPECT_NE(both.err.find("--steps"), std::string::npos) << both.err;
}

TEST(RunFlags, SamplingWithoutASeedDiffersAndThePrintedSeedRepeatsIt) {
    const std::string base =
        "generate '" + tiny_qwen3() + "' -p 'Once upon' -n 24 --temp 1 --top-k 0 --top-p 1 -t 2";
    const auto a = test::run_anelm(base);
    const auto b = test::run_anelm(base);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_NE(a.out, b.out);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(a.err, m, std::regex("seed ([0-9]+) \\(random")) ) << a.err;
    const auto again = test::run_anelm(base + " --seed " + m[1].str());
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(again.out, a.out);
    EXPECT_EQ(again.err.find("(random"), std::string::npos) << again.err;
}

TEST(RunFlags, GenerationConfigFillsTheFlagsLeftOut) {
    const fs::path model = test::temp_dir("cli-run-flags-gencfg") / "model";
    fs::create_directories(model.parent_path());
    fs::remove_all(model);
    fs::copy(tiny_qwen3(), model, fs::copy_options::recursive);
    std::ofstream(model / "generation_config.json")
        << R"({"do_sample": true, "temperature": 0.3, "top_k": 7, "top_p": 0.5,
              "min_p": 0.1, "repetition_penalty": 1.25, "eos_token_id": 0})";
    const std::string base = "generate '" + model.string() + "' -p hi -n 2 -t 2";
    const auto r = test::run_anelm(base);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("temp 0.3 (generation_config.json), top-k 7 (generation_config.json), "
                         "top-p 0.5 (generation_config.json), min-p 0.1 "
                         "(generation_config.json), repeat-penalty 1.25 (generation_config.json)"),
              std::string::npos)
        << r.err;
    const auto flag = test::run_anelm(base + " --temp 0.9 --top-k 3");
    ASSERT_EQ(flag.exit_code, 0) << flag.err;
    EXPECT_NE(flag.err.find("temp 0.9 (--temp), top-k 3 (--top-k), top-p 0.5 "
                            "(generation_config.json)"),
              std::string::npos)
        << flag.err;

    std::ofstream(model / "generation_config.json") << R"({"do_sample": false, "temperature": 0.3})";
    const auto greedy = test::run_anelm(base);
    ASSERT_EQ(greedy.exit_code, 0) << greedy.err;
    EXPECT_NE(greedy.err.find("sampling: greedy (generation_config.json: do_sample false)"),
              std::string::npos)
        << greedy.err;
}

TEST(RunFlags, NumbersOutOfRangeAreRefusedNamingTheFlag) {
    const std::string model = "'" + tiny_qwen3() + "'";
    const std::pair<std::string, std::string> cases[] = {
        {"generate " + model + " -p hi --temp -1", "--temp"},
        {"generate " + model + " -p hi --top-p 1.5", "--top-p"},
        {"generate " + model + " -p hi --top-k -3", "--top-k"},
        {"generate " + model + " -p hi --min-p 2", "--min-p"},
        {"generate " + model + " -p hi -t -2", "--threads"},
        {"generate " + model + " -p hi -t 999", "--threads"},
        {"generate " + model + " -p hi -n -5", "-n"},
        {"generate " + model + " -p hi --ctx 0", "--ctx"},
        {"chat " + model + " --temp 3", "--temp"},
        {"serve " + model + " --port 99999", "--port"},
        {"serve " + model + " --draft-n 0 --lookup 3", "--draft-n"},
        {"serve " + model + " --parallel 0", "--parallel"},
        {"generate " + model + " -p hi --lookup 3 --draft-n 0", "--draft-n"},
        {"bench " + model + " -r 0", "--repetitions"},
        {"bench " + model + " --lookup 2 --draft-n 3,0", "--draft-n"},
        {"convert " + model + " -o /nonexistent/out --ctx 0", "--ctx"},
        {"perplexity " + model + " -f /dev/null -b 0", "--batch"},
        {"synth tiny-llama -o /nonexistent/out -t 9999", "--threads"},
    };
    for (const auto& [args, flag] : cases) {
        const auto r = test::run_anelm(args);
        EXPECT_NE(r.exit_code, 0) << args;
        EXPECT_NE(r.err.find(flag + ": "), std::string::npos) << args << "\n" << r.err;
        EXPECT_NE(r.err.find("outside ["), std::string::npos) << args << "\n" << r.err;
        EXPECT_LT(r.err.size(), 200u) << args << "\n" << r.err;
        EXPECT_TRUE(r.out.empty()) << args;
    }
}

TEST(RunFlags, AMistypedFlagOrCommandSuggestsTheNearest) {
    const auto flag = test::run_anelm("generate '" + tiny_qwen3() + "' -p hi --tmp 0.5");
    EXPECT_NE(flag.exit_code, 0);
    EXPECT_NE(flag.err.find("--tmp: not expected here (did you mean --temp?)"), std::string::npos)
        << flag.err;
    const auto command = test::run_anelm("genrate '" + tiny_qwen3() + "'");
    EXPECT_NE(command.exit_code, 0);
    EXPECT_NE(command.err.find("did you mean generate?"), std::string::npos) << command.err;
    const auto far = test::run_anelm("generate '" + tiny_qwen3() + "' -p hi --zzzzzzzz 1");
    EXPECT_NE(far.exit_code, 0);
    EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;
}

TEST(RunFlags, CountsOfOneAreSingular) {
    const auto r = test::run_anelm("generate '" + tiny_qwen3() + "' -p hi -n 2 --temp 0 -t 1");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("(1 thread, "), std::string::npos) << r.err;
}

TEST(RunFlags, ContextPastTheTrainedLengthIsSaid) {
    // The tiny presets are trained for fewer positions than this.
    const auto r = test::run_anelm("generate '" + tiny_qwen3() +
                                   "' -p hi -n 2 --temp 0 -t 2 --ctx 10000000");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(
        r.err, m, std::regex("--ctx 10000000: capped at ([0-9]+), the model's trained length")))
        << r.err;
    // A prompt past that length: the error says it is the model's limit, not --ctx's.
    std::string words;
    for (int i = 0; i < std::stoi(m[1]) + 8; ++i) words += " hello";
    const auto too_long = test::run_anelm("generate '" + tiny_qwen3() + "' -p '" + words +
                                          "' -n 2 --temp 0 -t 2 --ctx 10000000");
    EXPECT_NE(too_long.exit_code, 0);
    EXPECT_NE(too_long.err.find("(the model's trained length)"), std::string::npos) << too_long.err;
    const auto small = test::run_anelm("generate '" + tiny_qwen3() + "' -p '" + words +
                                       "' -n 2 --temp 0 -t 2 --ctx 16");
    EXPECT_NE(small.exit_code, 0);
    EXPECT_NE(small.err.find("(raise --ctx)"), std::string::npos) << small.err;
}

}  // namespace
}  // namespace anelm
