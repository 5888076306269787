// anelm embed: one unit vector per text, from arguments or a file's lines, the
// pooling from --pooling or the model's sentence-transformers files.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "run_anelm.h"
#include "synth/synth.h"
#include "test_support.h"

namespace anelm {
namespace {

namespace fs = std::filesystem;

const fs::path& model_dir() {
    static const fs::path dir = [] {
        const fs::path p = test::temp_dir("cli-embed") / "tiny-qwen3";
        synth_write("tiny-qwen3", p.string(), DType::bf16, 7);
        return p;
    }();
    return dir;
}

nlohmann::json embed_json(const std::string& args) {
    const test::CommandResult r =
        test::run_anelm("embed " + model_dir().string() + " --json " + args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
}

TEST(EmbedCli, OneUnitVectorPerText) {
    const nlohmann::json v = embed_json("'a cat sat' 'on the mat' 'a cat sat'");
    ASSERT_EQ(v.size(), 3u);
    for (const auto& row : v) {
        ASSERT_EQ(row.size(), 64u);  // tiny-qwen3's n_embd
        double sum = 0;
        for (double x : row) sum += x * x;
        EXPECT_NEAR(std::sqrt(sum), 1.0, 1e-5);
    }
    EXPECT_EQ(v[0], v[2]);
    EXPECT_NE(v[0], v[1]);
}

TEST(EmbedCli, ReadsAFileAndThePoolingOfModulesJson) {
    const fs::path lines = test::temp_dir("cli-embed-file") / "texts.txt";
    std::ofstream(lines) << "a cat sat\n\non the mat\n";
    const nlohmann::json from_file = embed_json("-f " + lines.string());
    EXPECT_EQ(from_file, embed_json("'a cat sat' 'on the mat'"));

    const nlohmann::json last = embed_json("--pooling last 'a cat sat'");
    EXPECT_NE(last[0], from_file[0]);
    const fs::path declared = test::temp_dir("cli-embed-st") / "model";
    fs::copy(model_dir(), declared,
             fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    std::ofstream(declared / "modules.json")
        << R"([{"path": "", "type": "sentence_transformers.models.Transformer"},
              {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])";
    fs::create_directories(declared / "1_Pooling");
    std::ofstream(declared / "1_Pooling" / "config.json")
        << R"({"pooling_mode_mean_tokens": false, "pooling_mode_lasttoken": true})";
    const test::CommandResult r =
        test::run_anelm("embed " + declared.string() + " --json 'a cat sat'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("64 dims, last pooling (the model's modules.json)"), std::string::npos)
        << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out), last);
}

TEST(EmbedCli, TextsAndAFileAreOneOrTheOther) {
    const test::CommandResult r = test::run_anelm("embed " + model_dir().string());
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("anelm: error: give texts or -f FILE"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace anelm
