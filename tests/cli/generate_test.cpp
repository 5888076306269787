// `anelm generate` on stories260K against llama2.c's run.c, byte for byte.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "run_anelm.h"
#include "test_support.h"

namespace anelm {
namespace {

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

struct Golden {
    const char* prompt;
    const char* file;
};

class Stories260K : public ::testing::TestWithParam<Golden> {};

// Generates greedily from stories260K with `extra` options and compares the
// text with what run.c printed; returns the standard error.
std::string expect_run_c_text(const Golden& g, const std::string& extra) {
    const auto dir = test::shared_path("models/stories260K");
    const auto r = test::run_anelm("generate '" + (dir / "stories260K.bin").string() +
                                   "' --tokenizer '" + (dir / "tok512.bin").string() + "' -p '" +
                                   g.prompt + "' --steps 256 --temp 0" + extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::string expected =
        read_file(std::string(ANELM_SOURCE_DIR) + "/tests/data/stories260K/" + g.file);
    EXPECT_FALSE(expected.empty());
    EXPECT_EQ(r.out, expected);
    return r.err;
}

TEST_P(Stories260K, GreedyOutputEqualsRunC) {
    ANELM_REQUIRE_SHARED("models/stories260K/stories260K.bin");
    expect_run_c_text(GetParam(), "");
}

// Speculative decoding with every drafter prints run.c's text too.
TEST_P(Stories260K, GreedySpeculativeEqualsRunC) {
    ANELM_REQUIRE_SHARED("models/stories260K/stories260K.bin");
    for (const char* extra : {" --lookup 3", " --lookup 2 --draft-n 4",
                              " --draft-quant lut4 --draft-adaptive", " --draft-quant int8"}) {
        SCOPED_TRACE(extra);
        const std::string err = expect_run_c_text(GetParam(), extra);
        EXPECT_NE(err.find("speculative ("), std::string::npos) << err;
    }
}

void expect_one_line_error(const std::string& options, const std::string& names) {
    const auto dir = test::shared_path("models/stories260K");
    const auto r =
        test::run_anelm("generate '" + (dir / "stories260K.bin").string() + "' --tokenizer '" +
                        (dir / "tok512.bin").string() + "' -p hi " + options);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(names), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty());
}

TEST(Cli, DraftModelNeedsTheSameVocabulary) {
    ANELM_REQUIRE_SHARED("models/stories260K/stories260K.bin");
    const auto other = test::temp_dir("draft") / "tiny-qwen3";
    const auto synth = test::run_anelm("synth tiny-qwen3 -o '" + other.string() + "'");
    ASSERT_EQ(synth.exit_code, 0) << synth.err;
    expect_one_line_error("--draft '" + other.string() + "'", "same vocabulary");
    expect_one_line_error("--lookup 2 --draft-quant lut4", "not both");
}

INSTANTIATE_TEST_SUITE_P(Cli, Stories260K,
                         ::testing::Values(Golden{"Once upon a time", "once_upon_a_time.txt"},
                                           Golden{"The little dog", "the_little_dog.txt"},
                                           Golden{"Lily wanted to", "lily_wanted_to.txt"}));

TEST(Cli, MissingModelIsOneLineError) {
    const auto r = test::run_anelm("generate /nonexistent/model -p hi");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("/nonexistent/model"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty());
}

}  // namespace
}  // namespace anelm
