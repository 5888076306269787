// Every package coremltools wrote in ../shared/coreml-samples reads, and equals
// its protobuf text dump: protobuf's own text parser, run on the dump with our
// message subset, must give the same message field for field, and the op
// sequence and function names read from the raw dump text must match.
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>

#include "coreml/model_values.h"
#include "coreml/package.h"
#include "coreml/summary.h"
#include "io/io_test_util.h"

namespace anelm::coreml {
namespace {

const char* const samples[] = {"affine_ios16", "blockwise_int4", "kitchen_sink",
                               "kv_state",     "multifunction",  "palettized"};

std::string sample_dir(const std::string& name) {
    return test::shared_path("coreml-samples/" + name + ".mlpackage").string();
}

std::string dump_text(const std::string& name) {
    return test::read_file(test::shared_path("coreml-samples/text/" + name + ".prototxt").string());
}

spec::Model parse_dump(const std::string& text) {
    spec::Model model;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &model));
    return model;
}

// Function names and each one's op types, in the order the dump lists them.
std::vector<std::pair<std::string, std::vector<std::string>>> dump_ops(const std::string& text) {
    std::vector<std::pair<std::string, std::vector<std::string>>> out;
    static const std::regex function_key(R"re(^    key: "(\w+)"$)re");
    static const std::regex op_type(R"re(^\s*type: "(\w+)"$)re");
    std::istringstream in(text);
    std::string line, previous;
    bool in_program = false;
    std::smatch m;
    while (std::getline(in, line)) {
        in_program |= line == "mlProgram {";
        if (in_program && previous == "  functions {" && std::regex_match(line, m, function_key))
            out.emplace_back(m[1], std::vector<std::string>{});
        else if (in_program && !out.empty() && std::regex_match(line, m, op_type))
            out.back().second.push_back(m[1]);
        previous = line;
    }
    return out;
}

class SamplePackageTest : public testing::TestWithParam<const char*> {};

TEST_P(SamplePackageTest, BinaryEqualsTextDump) {
    const std::string name = GetParam();
    ANELM_REQUIRE_SHARED("coreml-samples/" + name + ".mlpackage");
    const Package package(sample_dir(name));
    const spec::Model text_model = parse_dump(dump_text(name));
    google::protobuf::util::MessageDifferencer differ;
    std::string report;
    differ.ReportDifferencesToString(&report);
    EXPECT_TRUE(differ.Compare(text_model, package.model())) << report;
    // Nothing in the binary is outside our message subset.
    EXPECT_TRUE(package.model().GetReflection()->GetUnknownFields(package.model()).empty());
}

TEST_P(SamplePackageTest, SummaryMatchesDumpText) {
    const std::string name = GetParam();
    ANELM_REQUIRE_SHARED("coreml-samples/" + name + ".mlpackage");
    const std::string text = dump_text(name);
    const PackageSummary s = summarize(Package(sample_dir(name)));

    static const std::regex spec_version(R"(^specificationVersion: (\d+)\n)");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(text, m, spec_version));
    EXPECT_EQ(s.spec_version, std::stoi(m[1]));

    const auto expected = dump_ops(text);
    ASSERT_EQ(s.functions.size(), expected.size());
    for (const auto& [function, ops] : expected) {
        const auto it =
            std::find_if(s.functions.begin(), s.functions.end(),
                         [&name = function](const FunctionSummary& f) { return f.name == name; });
        ASSERT_NE(it, s.functions.end()) << function;
        std::vector<std::string> types;
        for (const OpInfo& op : it->ops) types.push_back(op.type);
        EXPECT_EQ(types, ops) << function;
        int64_t counted = 0;
        for (const auto& [type, n] : it->op_counts) counted += n;
        EXPECT_EQ(counted, static_cast<int64_t>(ops.size()));
    }

    // Every blob the dump refers to is read, each counted once.
    static const std::regex blob_offset(
        R"re(blobFileValue \{\s*fileName: "[^"]+"\s*offset: (\d+))re");
    std::set<uint64_t> offsets;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), blob_offset);
         it != std::sregex_iterator(); ++it)
        offsets.insert(std::stoull((*it)[1]));
    EXPECT_EQ(s.n_blobs, static_cast<int64_t>(offsets.size()));
    EXPECT_EQ(s.weight_bytes > 0, !offsets.empty());
}

INSTANTIATE_TEST_SUITE_P(CoreMLSamples, SamplePackageTest, testing::ValuesIn(samples));

TEST(SamplePackage, KvStateSignature) {
    ANELM_REQUIRE_SHARED("coreml-samples/kv_state.mlpackage");
    const PackageSummary s = summarize(Package(sample_dir("kv_state")));
    EXPECT_EQ(s.spec_version, 9);
    EXPECT_EQ(s.default_function, "");
    ASSERT_EQ(s.functions.size(), 1u);
    const FunctionSummary& f = s.functions[0];
    EXPECT_EQ(f.name, "main");
    EXPECT_EQ(f.opset, "CoreML8");
    ASSERT_EQ(f.inputs.size(), 3u);
    EXPECT_EQ(f.inputs[0].name, "q");
    EXPECT_EQ(f.inputs[0].dtype, "fp16");
    EXPECT_EQ(f.inputs[0].shape, (std::vector<int64_t>{1, 2, 1, 8}));
    EXPECT_EQ(f.inputs[2].name, "pos");
    EXPECT_EQ(f.inputs[2].dtype, "int32");
    EXPECT_EQ(f.inputs[2].shape, (std::vector<int64_t>{1}));
    ASSERT_EQ(f.states.size(), 1u);
    EXPECT_EQ(f.states[0].name, "k_cache");
    EXPECT_EQ(f.states[0].dtype, "fp16");
    EXPECT_EQ(f.states[0].shape, (std::vector<int64_t>{1, 2, 16, 8}));
    ASSERT_EQ(f.outputs.size(), 1u);
    EXPECT_EQ(f.outputs[0].name, "attn");
    EXPECT_EQ(f.outputs[0].shape, (std::vector<int64_t>{1, 2, 1, 8}));
    for (const char* op :
         {"read_state", "slice_update", "write_state", "scaled_dot_product_attention"})
        EXPECT_EQ(f.op_counts.count(op), 1u) << op;
    EXPECT_EQ(s.n_blobs, 0);
}

TEST(SamplePackage, MultifunctionFunctionsInDescriptionOrder) {
    ANELM_REQUIRE_SHARED("coreml-samples/multifunction.mlpackage");
    const PackageSummary s = summarize(Package(sample_dir("multifunction")));
    EXPECT_EQ(s.default_function, "decode");
    ASSERT_EQ(s.functions.size(), 2u);
    EXPECT_EQ(s.functions[0].name, "prefill");
    EXPECT_EQ(s.functions[1].name, "decode");
    EXPECT_EQ(s.functions[0].inputs[0].shape, (std::vector<int64_t>{1, 2, 4, 4}));
    EXPECT_EQ(s.functions[1].inputs[0].shape, (std::vector<int64_t>{1, 2, 1, 4}));
    EXPECT_EQ(s.functions[0].states[0].name, "cache");
}

TEST(SamplePackage, PalettizedBlobsHaveTheirTypes) {
    ANELM_REQUIRE_SHARED("coreml-samples/palettized.mlpackage");
    const Package p(sample_dir("palettized"));
    std::map<uint64_t, BlobDType> seen;
    for_each_value(p.model(), [&](const spec::MILSpec::Value& v, const std::string&) {
        if (v.has_blobfilevalue()) seen[v.blobfilevalue().offset()] = p.blob(v).dtype;
    });
    // Offsets and types from the format reference's worked example.
    EXPECT_EQ(seen.at(64), BlobDType::u4);
    EXPECT_EQ(seen.at(384), BlobDType::f16);
    EXPECT_EQ(seen.size(), 4u);
}

}  // namespace
}  // namespace anelm::coreml
