// The MIL builder: const ops for parameters named as coremltools names them,
// small tensors inline and large ones as blobs at the offsets weight.bin gives
// them, and a built model written as a package reads back equal.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cstring>

#include "base/half.h"
#include "coreml/mil_builder.h"
#include "coreml/write_package.h"
#include "io/io_test_util.h"

namespace anelm::coreml {
namespace {

namespace fs = std::filesystem;

const mil::Operation* find_op(const mil::Block& block, const std::string& output) {
    for (const mil::Operation& op : block.operations())
        if (op.outputs(0).name() == output) return &op;
    return nullptr;
}

// A function "main" computing y = x * w + 1 with w a 64-element fp16 blob.
spec::Model tiny_model(BlobSet& blobs, std::vector<float>& w) {
    spec::Model model;
    model.set_specificationversion(9);
    mil::Function& fn = (*model.mutable_mlprogram()->mutable_functions())["main"];
    model.mutable_mlprogram()->set_version(1);
    fn.set_opset("CoreML8");
    mil::NamedValueType& in = *fn.add_inputs();
    in.set_name("x");
    *in.mutable_type() = tensor_value_type(mil::FLOAT16, {1, 64});
    mil::Block& block = (*fn.mutable_block_specializations())["CoreML8"];
    MilBuilder b(block, blobs);
    w.resize(64);
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.25f * static_cast<float>(i);
    const MilValue wv = b.const_f16("w", {1, 64}, w);
    const MilValue x{"x", mil::FLOAT16, {1, 64}};
    const MilValue xw = b.op("mul", "xw", {{"x", x}, {"y", wv}}, mil::FLOAT16, {1, 64});
    const MilValue y =
        b.op("add", "y", {{"x", xw}, {"y", MilParam::fp16(1.0f)}}, mil::FLOAT16, {1, 64});
    b.output(y);
    return model;
}

TEST(MilBuilder, ParametersBecomeNamedConstOps) {
    BlobSet blobs;
    std::vector<float> w;
    const spec::Model model = tiny_model(blobs, w);
    const mil::Block& block =
        model.mlprogram().functions().at("main").block_specializations().at("CoreML8");
    const mil::Operation* c = find_op(block, "y_y_0");
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->type(), "const");
    const mil::Value& val = c->attributes().at("val");
    ASSERT_TRUE(val.has_immediatevalue());
    uint16_t h = 0;
    std::memcpy(&h, val.immediatevalue().tensor().bytes().values().data(), 2);
    EXPECT_EQ(f16_to_f32(h), 1.0f);
    const mil::Operation* add = find_op(block, "y");
    ASSERT_NE(add, nullptr);
    EXPECT_EQ(add->inputs().at("y").arguments(0).name(), "y_y_0");
    EXPECT_EQ(add->inputs().at("x").arguments(0).name(), "xw");
    EXPECT_EQ(add->attributes().at("name").immediatevalue().tensor().strings().values(0), "y");
    EXPECT_EQ(block.outputs(0), "y");
}

TEST(MilBuilder, LargeConstantsAreBlobsAtTheirFileOffsets) {
    BlobSet blobs;
    std::vector<float> w;
    const spec::Model model = tiny_model(blobs, w);
    const mil::Block& block =
        model.mlprogram().functions().at("main").block_specializations().at("CoreML8");
    const mil::Value& val = find_op(block, "w")->attributes().at("val");
    ASSERT_TRUE(val.has_blobfilevalue());
    EXPECT_EQ(val.blobfilevalue().offset(), 64u);
    const Blob b = blobs.blob(val);
    ASSERT_EQ(b.data.size(), 128u);
    for (size_t i = 0; i < w.size(); ++i) {
        uint16_t h = 0;
        std::memcpy(&h, b.data.data() + 2 * i, 2);
        EXPECT_EQ(f16_to_f32(h), w[i]);
    }
    EXPECT_EQ(blobs.file_bytes(), 64u + 64u + 128u);
}

TEST(MilBuilder, SecondBlobStartsAligned) {
    BlobSet blobs;
    const std::vector<uint8_t> a(10, 1), c(3, 2);
    EXPECT_EQ(blobs.add(BlobDType::u8, 10, a), 64u);
    EXPECT_EQ(blobs.add(BlobDType::u4, 6, c), 192u);  // 64 + 64 + 10 rounded up to 64
    test::expect_error([&] { blobs.add(BlobDType::u4, 9, c); }, {"need 5 bytes"});
}

class MilBuilderPackageTest : public test::ScratchDir {};

TEST_F(MilBuilderPackageTest, WrittenModelReadsBackEqual) {
    BlobSet blobs;
    std::vector<float> w;
    const spec::Model model = tiny_model(blobs, w);
    const fs::path out = dir_ / "tiny.mlpackage";
    write_package(out, model, blobs);
    const Package back(out);
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(model, back.model()));
    const mil::Block& block =
        back.model().mlprogram().functions().at("main").block_specializations().at("CoreML8");
    const mil::Value& val = find_op(block, "w")->attributes().at("val");
    const Blob written = back.blob(val);
    const Blob built = blobs.blob(val);
    ASSERT_EQ(written.data.size(), built.data.size());
    EXPECT_EQ(std::memcmp(written.data.data(), built.data.data(), built.data.size()), 0);
    test::expect_error([&] { write_package(out, model, blobs); }, {"already exists"});
}

}  // namespace
}  // namespace anelm::coreml
