// `anelm plan` end to end: the table, JSON, the SVG file, and one-line errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "run_anelm.h"
#include "test_support.h"

namespace anelm::test {
namespace {

TEST(PlanCli, TablePerChip) {
    const CommandResult r = run_anelm("plan qwen3-0.6b --chip m4-max --ctx 1024");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("M4 Max"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("M1 Pro"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("ctx 1024"), std::string::npos) << r.out;
}

TEST(PlanCli, JsonListsEveryChip) {
    const CommandResult r = run_anelm("plan llama-3.2-1b --quant int8 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_GE(j["chips"].size(), 20u);
    EXPECT_DOUBLE_EQ(j["precision"]["ffn_bits"].get<double>(), 8 + 16.0 / 2048);
}

TEST(PlanCli, SvgWrittenWhole) {
    const auto dir = temp_dir("plan-svg");
    const auto svg = dir / "chips.svg";
    const CommandResult r = run_anelm("plan qwen3-1.7b --svg " + svg.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::ifstream f(svg);
    std::stringstream text;
    text << f.rdbuf();
    EXPECT_EQ(text.str().rfind("<svg", 0), 0u);
    EXPECT_NE(text.str().find("</svg>"), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(svg.string() + ".tmp"));
    std::filesystem::remove_all(dir);
}

TEST(PlanCli, ValidateTable) {
    const CommandResult r = run_anelm("plan --validate");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("0 outside their bound"), std::string::npos) << r.out;
}

TEST(PlanCli, BadNamesAreOneLineErrors) {
    for (const char* args :
         {"plan qwen3-0.6b --chip M9", "plan no-such-preset", "plan qwen3-0.6b --quant ffn=5"}) {
        const CommandResult r = run_anelm(args);
        EXPECT_EQ(r.exit_code, 1) << args;
        EXPECT_EQ(r.err.rfind("anelm: error: ", 0), 0u) << r.err;
        EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
        EXPECT_TRUE(r.out.empty()) << r.out;
    }
}

}  // namespace
}  // namespace anelm::test
