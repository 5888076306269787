// Writing packages: each coremltools sample written back reads back equal
// (model message, weight.bin bytes, manifest), the folder appears only when
// complete, and damaged packages are refused on one line.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "coreml/package.h"
#include "io/io_test_util.h"

namespace anelm::coreml {
namespace {

namespace fs = std::filesystem;
using test::expect_error;
using test::read_file;
using test::write_file;

const char* const samples[] = {"affine_ios16", "blockwise_int4", "kitchen_sink",
                               "kv_state",     "multifunction",  "palettized"};

fs::path sample_dir(const std::string& name) {
    return test::shared_path("coreml-samples/" + name + ".mlpackage");
}

const std::string model_rel = "Data/com.apple.CoreML/model.mlmodel";
const std::string weights_rel = "Data/com.apple.CoreML/weights/weight.bin";

class PackageWriterTest : public test::ScratchDir {
protected:
    // A writable copy of a sample, files and all.
    fs::path copy_files(const std::string& name) {
        const fs::path out = dir_ / (name + ".mlpackage");
        fs::copy(sample_dir(name), out, fs::copy_options::recursive);
        for (const auto& e : fs::recursive_directory_iterator(out))
            fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
        return out;
    }
};

class SampleRoundTripTest : public PackageWriterTest,
                            public testing::WithParamInterface<const char*> {};

TEST_P(SampleRoundTripTest, WrittenBackReadsBackEqual) {
    const std::string name = GetParam();
    ANELM_REQUIRE_SHARED("coreml-samples/" + name + ".mlpackage");
    const Package in(sample_dir(name));
    const fs::path out = dir_ / "out.mlpackage";
    copy_package(in, out);

    const Package back(out);
    std::string report;
    google::protobuf::util::MessageDifferencer differ;
    differ.ReportDifferencesToString(&report);
    EXPECT_TRUE(differ.Compare(in.model(), back.model())) << report;

    const fs::path weights = sample_dir(name) / weights_rel;
    if (fs::exists(weights))
        EXPECT_EQ(read_file((out / weights_rel).string()), read_file(weights.string()));
    else
        EXPECT_FALSE(
            fs::exists(out / weights_rel));  // an empty weights folder, as coremltools leaves it
    EXPECT_TRUE(fs::is_directory(out / "Data/com.apple.CoreML/weights"));

    const Manifest& a = in.manifest();
    const Manifest& b = back.manifest();
    EXPECT_EQ(b.file_format_version, a.file_format_version);
    EXPECT_EQ(b.root_model_id, a.root_model_id);
    ASSERT_EQ(b.items.size(), a.items.size());
    for (size_t i = 0; i < a.items.size(); ++i) {
        EXPECT_EQ(b.items[i].id, a.items[i].id);
        EXPECT_EQ(b.items[i].path, a.items[i].path);
        EXPECT_EQ(b.items[i].name, a.items[i].name);
        EXPECT_EQ(b.items[i].author, a.items[i].author);
        EXPECT_EQ(b.items[i].description, a.items[i].description);
    }
    // The same JSON text as Core ML's own writer.
    EXPECT_EQ(read_file((out / "Manifest.json").string()),
              read_file((sample_dir(name) / "Manifest.json").string()));
}

INSTANTIATE_TEST_SUITE_P(CoreMLSamples, SampleRoundTripTest, testing::ValuesIn(samples));

TEST_F(PackageWriterTest, AppearsOnlyWhenFinished) {
    const fs::path out = dir_ / "new.mlpackage";
    spec::Model model;
    model.set_specificationversion(9);
    auto& function = (*model.mutable_mlprogram()->mutable_functions())["main"];
    model.mutable_mlprogram()->set_version(1);
    function.set_opset("CoreML8");
    (*function.mutable_block_specializations())["CoreML8"];
    {
        PackageWriter abandoned(out);
        abandoned.weights().add_codes(BlobDType::u8, std::vector<uint8_t>(16, 1));
    }
    EXPECT_FALSE(fs::exists(out));
    EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 0);
    {
        PackageWriter writer(out);
        writer.finish(model);
    }
    EXPECT_EQ(Package(out).model().specificationversion(), 9);
    expect_error([&] { PackageWriter again(out); }, {out.string(), "already exists"});
    model.set_specificationversion(8);
    PackageWriter(out, default_manifest(), /*overwrite=*/true).finish(model);
    EXPECT_EQ(Package(out).model().specificationversion(), 8);
}

TEST_F(PackageWriterTest, NewPackageBlobsReadBack) {
    namespace mil = spec::MILSpec;
    const fs::path out = dir_ / "fresh.mlpackage";
    PackageWriter writer(out);
    const std::vector<uint8_t> codes = {1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0};  // uint2 [3, 4]
    const uint64_t offset = writer.weights().add_codes(BlobDType::u2, codes);

    spec::Model model;
    model.set_specificationversion(9);
    mil::Program& program = *model.mutable_mlprogram();
    program.set_version(1);
    mil::Function& function = (*program.mutable_functions())["main"];
    function.set_opset("CoreML8");
    mil::Operation& op = *(*function.mutable_block_specializations())["CoreML8"].add_operations();
    op.set_type("const");
    mil::Value& val = (*op.mutable_attributes())["val"];
    mil::TensorType& type = *val.mutable_type()->mutable_tensortype();
    type.set_datatype(mil::UINT2);
    type.set_rank(2);
    type.add_dimensions()->mutable_constant()->set_size(3);
    type.add_dimensions()->mutable_constant()->set_size(4);
    val.mutable_blobfilevalue()->set_filename(weight_file_name);
    val.mutable_blobfilevalue()->set_offset(offset);
    writer.finish(model);

    const Package back(out);
    const Blob b = back.blob(back.model()
                                 .mlprogram()
                                 .functions()
                                 .at("main")
                                 .block_specializations()
                                 .at("CoreML8")
                                 .operations(0)
                                 .attributes()
                                 .at("val"));
    EXPECT_EQ(b.dtype, BlobDType::u2);
    EXPECT_EQ(blob_codes(b), codes);

    type.set_datatype(mil::UINT4);  // the blob no longer fits its value's type
    PackageWriter again(out, default_manifest(), /*overwrite=*/true);
    again.weights().add_codes(BlobDType::u2, codes);
    again.finish(model);
    expect_error([&] { Package p(out); }, {"weight.bin", "holds uint2", "uint4", "op "});
}

TEST_F(PackageWriterTest, DamagedModelNamesFileAndField) {
    ANELM_REQUIRE_SHARED("coreml-samples/kv_state.mlpackage");
    const fs::path pkg = copy_files("kv_state");
    const std::string model_file = (pkg / model_rel).string();
    const std::string good = read_file(model_file);

    write_file(model_file, good.substr(0, good.size() / 2));
    expect_error([&] { Package p(pkg); },
                 {model_file, "not a Core ML Model protobuf", "field mlProgram"});

    std::string bad = good;
    bad[0] = static_cast<char>(0x0f);  // field 1 with wire type 7
    write_file(model_file, bad);
    expect_error([&] { Package p(pkg); }, {model_file, "at byte 0", "wire type 7"});

    write_file(model_file, "");
    expect_error([&] { Package p(pkg); }, {model_file, "mlProgram", "not an ML Program"});

    fs::remove(model_file);
    expect_error([&] { Package p(pkg); }, {model_file, "cannot open"});
}

// A package of one function whose program is `program` (nothing by default).
fs::path write_package(const fs::path& out, const spec::MILSpec::Program& program = {}) {
    spec::Model model;
    model.set_specificationversion(9);
    *model.mutable_mlprogram() = program;
    model.mutable_mlprogram()->set_version(1);
    auto& function = (*model.mutable_mlprogram()->mutable_functions())["main"];
    function.set_opset("CoreML8");
    (*function.mutable_block_specializations())["CoreML8"];
    PackageWriter writer(out);
    writer.weights().add(BlobDType::f16, 0, {});  // at offset 64
    writer.finish(model);
    return out;
}

TEST_F(PackageWriterTest, ElementCountsDoNotWrap) {
    // fp16[2^62, 4] has 2^64 elements, 0 once wrapped: the empty blob must not fit it.
    namespace mil = spec::MILSpec;
    mil::Program program;
    mil::Operation& op =
        *(*(*program.mutable_functions())["main"].mutable_block_specializations())["CoreML8"]
             .add_operations();
    op.set_type("const");
    mil::Value& val = (*op.mutable_attributes())["val"];
    mil::TensorType& type = *val.mutable_type()->mutable_tensortype();
    type.set_datatype(mil::FLOAT16);
    type.set_rank(2);
    type.add_dimensions()->mutable_constant()->set_size(uint64_t{1} << 62);
    type.add_dimensions()->mutable_constant()->set_size(4);
    val.mutable_blobfilevalue()->set_filename(weight_file_name);
    val.mutable_blobfilevalue()->set_offset(64);
    const fs::path pkg = write_package(dir_ / "wrap.mlpackage", program);
    expect_error([&] { Package p(pkg); }, {"weight.bin", "offset 64", "more than 2^40 elements"});
}

TEST_F(PackageWriterTest, ModelOverTwoGigabytesIsRefused) {
    // protobuf takes an int size: 2^31 bytes (sparse) would have become negative.
    const fs::path pkg = write_package(dir_ / "huge.mlpackage");
    const std::string model_file = (pkg / model_rel).string();
    fs::resize_file(model_file, uint64_t{1} << 31);
    expect_error([&] { Package p(pkg); }, {model_file, "2147483648 bytes", "2147483647"});
}

// A length-delimited protobuf field's tag and length.
std::string field_header(uint32_t number, uint64_t length) {
    std::string out;
    for (uint64_t v : {uint64_t{number} << 3 | 2, length}) {
        for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>(v | 0x80));
        out.push_back(static_cast<char>(v));
    }
    return out;
}

std::string field(uint32_t number, const std::string& payload) {
    return field_header(number, payload.size()) + payload;
}

TEST_F(PackageWriterTest, DeeplyNestedModelIsDiagnosedBriefly) {
    // A function input of type list<list<...>> 2 * 10^5 messages deep: protobuf
    // refuses it (its limit is 100) and the diagnosis stops at 100 levels too.
    constexpr int pairs = 100000;
    std::vector<uint64_t> size(pairs + 1, 0);  // of the ValueType at each level, innermost 0
    auto list_size = [&](int k) { return field_header(1, size[k - 1]).size() + size[k - 1]; };
    for (int k = 1; k <= pairs; ++k) size[k] = field_header(2, list_size(k)).size() + list_size(k);
    std::string value_type;
    for (int k = pairs; k >= 1; --k)  // ValueType.listType = 2, ListType.type = 1
        value_type += field_header(2, list_size(k)) + field_header(1, size[k - 1]);
    const std::string function = field(1, field(2, value_type));  // inputs[0].type
    const std::string model = field(502, field(2, field(1, "main") + field(2, function)));

    const fs::path pkg = write_package(dir_ / "deep.mlpackage");
    const std::string model_file = (pkg / model_rel).string();
    write_file(model_file, model);
    expect_error([&] { Package p(pkg); },
                 {model_file, "not a Core ML Model protobuf", "nested more than 100 deep"});
}

TEST_F(PackageWriterTest, DamagedWeightsNameFileAndOffset) {
    ANELM_REQUIRE_SHARED("coreml-samples/palettized.mlpackage");
    const fs::path pkg = copy_files("palettized");
    const std::string weights = (pkg / weights_rel).string();
    const std::string good = read_file(weights);

    write_file(weights, good.substr(0, 500));
    expect_error([&] { Package p(pkg); }, {weights, "offset", "model.mlmodel: function main"});

    std::string bad = good;
    bad[384] = 'X';
    write_file(weights, bad);
    expect_error([&] { Package p(pkg); }, {weights, "offset 384", "sentinel"});

    bad = good;
    bad[64 + 4] = 1;  // the uint4 indices claim to be fp16
    write_file(weights, bad);
    expect_error([&] { Package p(pkg); }, {weights, "offset 64", "holds fp16", "uint4"});

    write_file(weights, good.substr(0, 30));
    expect_error([&] { Package p(pkg); }, {weights, "header truncated"});
}

}  // namespace
}  // namespace anelm::coreml
