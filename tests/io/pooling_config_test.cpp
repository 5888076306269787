// The pooling a sentence-transformers checkpoint declares (modules.json and its
// Pooling module's config.json, as Qwen3-Embedding and BGE ship them).
#include "io/pooling_config.h"

#include <gtest/gtest.h>

#include <fstream>

#include "base/error.h"
#include "test_support.h"

namespace anelm {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
}

const char* modules = R"([
 {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
 {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
 {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
])";

std::string pooling_json(bool cls, bool mean, bool last) {
    return fmt::format(R"({{"word_embedding_dimension": 1024, "pooling_mode_cls_token": {},
        "pooling_mode_mean_tokens": {}, "pooling_mode_max_tokens": false,
        "pooling_mode_lasttoken": {}, "include_prompt": true}})",
                       cls, mean, last);
}

TEST(PoolingConfig, ReadsTheModeThePoolingModuleSets) {
    const fs::path dir = test::temp_dir("pooling");
    write(dir / "modules.json", modules);
    write(dir / "1_Pooling" / "config.json", pooling_json(false, false, true));
    EXPECT_EQ(read_pooling(dir.string()), Pooling::last);
    write(dir / "1_Pooling" / "config.json", pooling_json(false, true, false));
    EXPECT_EQ(read_pooling(dir.string()), Pooling::mean);
    write(dir / "1_Pooling" / "config.json", pooling_json(true, false, false));
    EXPECT_EQ(read_pooling(dir.string()), Pooling::cls);
    write(dir / "1_Pooling" / "config.json", pooling_json(false, false, false));
    EXPECT_THROW(read_pooling(dir.string()), Error);
}

TEST(PoolingConfig, NoneWithoutSentenceTransformersFiles) {
    const fs::path dir = test::temp_dir("pooling-none");
    EXPECT_EQ(read_pooling(dir.string()), std::nullopt);
    write(dir / "modules.json",
          R"([{"path": "", "type": "sentence_transformers.models.Transformer"}])");
    EXPECT_EQ(read_pooling(dir.string()), std::nullopt);
    write(dir / "modules.json", R"({"path": ""})");
    EXPECT_THROW(read_pooling(dir.string()), Error);
}

TEST(PoolingConfig, Names) {
    EXPECT_EQ(pooling_from_name("last"), Pooling::last);
    EXPECT_STREQ(pooling_name(Pooling::cls), "cls");
    EXPECT_THROW(pooling_from_name("max"), Error);
}

}  // namespace
}  // namespace anelm
