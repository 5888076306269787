// `anelm info` on Core ML packages written by coremltools.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_anelm.h"
#include "test_support.h"

namespace anelm {
namespace {

TEST(CoreMLInfo, JsonDescribesTheStatefulSample) {
    ANELM_REQUIRE_SHARED("coreml-samples/kv_state.mlpackage");
    const auto r = test::run_anelm(
        "info --json '" + test::shared_path("coreml-samples/kv_state.mlpackage").string() + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["spec_version"], 9);
    ASSERT_EQ(j["functions"].size(), 1u);
    const auto& f = j["functions"][0];
    EXPECT_EQ(f["name"], "main");
    EXPECT_EQ(f["states"][0]["name"], "k_cache");
    EXPECT_EQ(f["states"][0]["shape"], nlohmann::json({1, 2, 16, 8}));
    EXPECT_EQ(f["outputs"][0]["name"], "attn");
    EXPECT_EQ(f["op_counts"]["scaled_dot_product_attention"], 1);
}

TEST(CoreMLInfo, TextListsFunctionsAndWeights) {
    ANELM_REQUIRE_SHARED("coreml-samples/multifunction.mlpackage");
    const auto r = test::run_anelm(
        "info '" + test::shared_path("coreml-samples/multifunction.mlpackage").string() + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("function prefill (CoreML8)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("function decode (CoreML8), the default"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("weights        0 bytes"), std::string::npos) << r.out;
}

TEST(CoreMLInfo, DamagedPackageIsOneLineError) {
    const auto dir = test::temp_dir("coreml-info-damaged") / "bad.mlpackage";
    std::filesystem::create_directories(dir);
    std::FILE* f = std::fopen((dir / "Manifest.json").c_str(), "w");
    std::fputs("{\"fileFormatVersion\": \"1.0.0\"}", f);
    std::fclose(f);
    const auto r = test::run_anelm("info '" + dir.string() + "'");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("itemInfoEntries"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
    std::filesystem::remove_all(dir.parent_path());
}

}  // namespace
}  // namespace anelm
