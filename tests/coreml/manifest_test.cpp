// Manifest.json: coremltools' files read, ours written in the same shape, and
// malformed ones refused on one line.
#include "coreml/manifest.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "io/io_test_util.h"

namespace anelm::coreml {
namespace {

using test::expect_error;
using test::write_file;

class ManifestTest : public test::ScratchDir {};

TEST_F(ManifestTest, ReadsCoreMLToolsManifest) {
    ANELM_REQUIRE_SHARED("coreml-samples/kv_state.mlpackage/Manifest.json");
    const Manifest m =
        read_manifest(test::shared_path("coreml-samples/kv_state.mlpackage/Manifest.json"));
    EXPECT_EQ(m.file_format_version, "1.0.0");
    ASSERT_EQ(m.items.size(), 2u);
    EXPECT_EQ(m.root_model_id, "7d7dcbb5-232c-4550-8fc2-91cdd6350434");
    EXPECT_EQ(m.root_model().path, "com.apple.CoreML/model.mlmodel");
    EXPECT_EQ(m.root_model().name, "model.mlmodel");
    const ManifestItem* weights = m.find("weights", "com.apple.CoreML");
    ASSERT_NE(weights, nullptr);
    EXPECT_EQ(weights->id, "d27b9220-e385-4fe5-8c87-85fd085d538c");
    EXPECT_EQ(weights->path, "com.apple.CoreML/weights");
    EXPECT_EQ(weights->description, "CoreML Model Weights");
}

TEST_F(ManifestTest, DefaultManifestRoundTrips) {
    const Manifest m = default_manifest();
    ASSERT_EQ(m.items.size(), 2u);
    const std::regex uuid("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
    for (const ManifestItem& item : m.items)
        EXPECT_TRUE(std::regex_match(item.id, uuid)) << item.id;
    EXPECT_NE(m.items[0].id, m.items[1].id);
    EXPECT_NE(m.items[0].id, default_manifest().items[0].id);

    write_file(path("Manifest.json"), manifest_json(m));
    const Manifest back = read_manifest(path("Manifest.json"));
    EXPECT_EQ(back.root_model_id, m.root_model_id);
    ASSERT_EQ(back.items.size(), 2u);
    for (const ManifestItem& item : m.items) {
        const ManifestItem* b = back.find(item.name, item.author);
        ASSERT_NE(b, nullptr) << item.name;
        EXPECT_EQ(b->id, item.id);
        EXPECT_EQ(b->path, item.path);
        EXPECT_EQ(b->description, item.description);
    }
}

TEST_F(ManifestTest, MalformedManifestsAreRefused) {
    const std::string file = path("Manifest.json");
    nlohmann::json good = nlohmann::json::parse(manifest_json(default_manifest()));
    const std::string id = good["rootModelIdentifier"];

    nlohmann::json j = good;
    j["itemInfoEntries"][id].erase("author");
    write_file(file, j.dump());
    expect_error([&] { read_manifest(file); }, {file, "itemInfoEntries." + id, "\"author\""});

    j = good;
    j["itemInfoEntries"][id]["path"] = 3;
    write_file(file, j.dump());
    expect_error([&] { read_manifest(file); }, {file, "path is an integer"});

    j = good;
    j["fileFormatVersion"] = "2.0.0";
    write_file(file, j.dump());
    expect_error([&] { read_manifest(file); }, {file, "fileFormatVersion \"2.0.0\""});

    j = good;
    j["rootModelIdentifier"] = "nobody";
    write_file(file, j.dump());
    expect_error([&] { read_manifest(file); }, {file, "rootModelIdentifier nobody"});

    write_file(file, "{\"fileFormatVersion\": ");
    expect_error([&] { read_manifest(file); }, {file, "not valid JSON"});
}

}  // namespace
}  // namespace anelm::coreml
