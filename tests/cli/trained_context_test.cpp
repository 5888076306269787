// A context past the model's trained length, end to end: convert warns on
// stderr and records the trained length in meta.yaml; lint reports ANE019 on
// the converted folder and on the model linted as convert would write it, and
// nothing at the trained length.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "io/json_file.h"
#include "run_anelm.h"
#include "synth/synth.h"
#include "test_support.h"

namespace anelm {
namespace {

namespace fs = std::filesystem;

// tiny-llama: max_position_embeddings 2048.
const fs::path& tiny_llama() {
    static const fs::path path = [] {
        const fs::path p = test::temp_dir("cli-trained-context") / "tiny-llama";
        synth_write("tiny-llama", p.string(), DType::bf16, 7);
        return p;
    }();
    return path;
}

std::string quoted(const fs::path& p) {
    return "'" + p.string() + "'";
}

int ane019_count(const std::string& json) {
    int n = 0;
    const auto j = nlohmann::json::parse(json);
    for (const auto& f : j["findings"])
        if (f["id"] == "ANE019") {
            EXPECT_EQ(f["severity"], "warning");
            ++n;
        }
    return n;
}

TEST(CliTrainedContext, ConvertWarnsAndLintReportsIt) {
    const fs::path out = test::temp_dir("cli-trained-context-out") / "out";
    const auto c = test::run_anelm("convert " + quoted(tiny_llama()) + " -o " + quoted(out) +
                                   " --ctx 4096 --batch 16 --chunks 2 -t 2");
    ASSERT_EQ(c.exit_code, 0) << c.err;
    EXPECT_NE(c.err.find("anelm: warning: --ctx 4096 is past the model's trained length 2048"),
              std::string::npos)
        << c.err;
    const std::string meta = read_text_file((out / "meta.yaml").string());
    EXPECT_NE(meta.find("n_ctx_train: 2048"), std::string::npos) << meta;
    EXPECT_NE(meta.find("context_length: 4096"), std::string::npos) << meta;

    const auto r = test::run_anelm("lint " + quoted(out) + " --json");
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_EQ(ane019_count(r.out), 1) << r.out;
    const auto text = test::run_anelm("lint " + quoted(out));
    EXPECT_NE(text.out.find("warning ANE019 meta.yaml::  context 4096 is past the model's "
                            "trained length 2048"),
              std::string::npos)
        << text.out;
}

TEST(CliTrainedContext, AtTheTrainedLengthNothingIsSaid) {
    const fs::path out = test::temp_dir("cli-trained-context-at") / "out";
    const auto c = test::run_anelm("convert " + quoted(tiny_llama()) + " -o " + quoted(out) +
                                   " --ctx 2048 --batch 16 --chunks 2 -t 2");
    ASSERT_EQ(c.exit_code, 0) << c.err;
    EXPECT_EQ(c.err.find("warning"), std::string::npos) << c.err;
    const auto r = test::run_anelm("lint " + quoted(out) + " --json");
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(ane019_count(r.out), 0) << r.out;
}

TEST(CliTrainedContext, ModelLintedAsConvertWouldWriteIt) {
    const std::string model = "lint " + quoted(tiny_llama()) + " --batch 16 --chunks 2 -t 2 --json";
    const auto past = test::run_anelm(model + " --ctx 4096");
    EXPECT_EQ(past.exit_code, 3) << past.out << past.err;
    EXPECT_EQ(ane019_count(past.out), 1) << past.out;
    const auto at = test::run_anelm(model + " --ctx 2048");
    EXPECT_EQ(at.exit_code, 0) << at.out << at.err;
    EXPECT_EQ(ane019_count(at.out), 0) << at.out;
}

}  // namespace
}  // namespace anelm
