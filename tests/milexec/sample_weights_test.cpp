// Compressed weights of the coremltools samples decoded by hand, straight from
// the package's bytes, and the layers that use them computed with plain loops:
// iOS16 affine dequantization and packed LUT, iOS18 grouped uint4/uint2 LUTs.
#include <gtest/gtest.h>

#include <cmath>

#include "base/half.h"
#include "coreml/package.h"
#include "mil_program.h"
#include "test_support.h"

namespace anelm::milexec::test {
namespace {

float half_at(const uint8_t* bytes, int64_t k) {
    return f16_to_f32(static_cast<uint16_t>(bytes[2 * k] | bytes[2 * k + 1] << 8));
}

int code_at(const uint8_t* bytes, int64_t k, int bits) {
    const int64_t per_byte = 8 / bits;
    return bytes[k / per_byte] >> (bits * (k % per_byte)) & ((1 << bits) - 1);
}

const uint8_t* immediate_bytes(const mil::Value& v) {
    return reinterpret_cast<const uint8_t*>(v.immediatevalue().tensor().bytes().values().data());
}

// y[t, o] = sum_i x[t, i] w[o, i] + bias[o]
std::vector<float> linear_ref(const std::vector<float>& x, const std::vector<float>& w,
                              const std::vector<float>& bias, int64_t n_in) {
    const int64_t rows = static_cast<int64_t>(x.size()) / n_in;
    const int64_t n_out = static_cast<int64_t>(bias.size());
    std::vector<float> y;
    for (int64_t t = 0; t < rows; ++t)
        for (int64_t o = 0; o < n_out; ++o) {
            double s = bias[o];
            for (int64_t i = 0; i < n_in; ++i) s += x[t * n_in + i] * w[o * n_in + i];
            y.push_back(static_cast<float>(s));
        }
    return y;
}

const google::protobuf::RepeatedPtrField<mil::Operation>& main_ops(const coreml::Package& pkg) {
    const mil::Function& fn = pkg.model().mlprogram().functions().at("main");
    return fn.block_specializations().at(fn.opset()).operations();
}

TEST(MilSampleWeights, AffineAndPackedLutIos16) {
    const std::string rel = "coreml-samples/affine_ios16.mlpackage";
    ANELM_REQUIRE_SHARED(rel);
    const coreml::Package pkg(anelm::test::shared_path(rel));
    const auto& ops = main_ops(pkg);
    const auto& aff = ops[0].attributes();
    const coreml::Blob q = pkg.blob(aff.at("quantized_data"));
    const uint8_t* scale = immediate_bytes(aff.at("scale"));
    ASSERT_EQ(aff.at("zero_point").immediatevalue().tensor().bytes().values(),
              std::string(1, '\0'));
    std::vector<float> w_aff(8 * 16);
    for (int k = 0; k < 8 * 16; ++k)
        w_aff[k] = round_to_f16(half_at(scale, k / 16) * static_cast<int8_t>(q.data[k]));
    const auto& lut_op = ops[3].attributes();
    const coreml::Blob idx = pkg.blob(lut_op.at("indices"));
    const coreml::Blob lut = pkg.blob(lut_op.at("lut"));
    const coreml::Blob bias = pkg.blob(ops[4].attributes().at("val"));
    std::vector<float> w_lut(16 * 8), b16(16);
    for (int k = 0; k < 16 * 8; ++k)
        w_lut[k] = half_at(lut.data.data(), code_at(idx.data.data(), k, 4));
    for (int k = 0; k < 16; ++k) b16[k] = half_at(bias.data.data(), k);

    const Function f(pkg.model().mlprogram(), "main", pkg, Rounding::none);
    States states;
    const std::vector<float> x = ramp(16, 0.125f);
    const auto out = f.run({{"x", floats(mil::FLOAT16, {1, 16}, x)}}, states);
    const std::vector<float> h = linear_ref(x, w_aff, std::vector<float>(8, 0.0f), 16);
    expect_near(out.at("lin_lut16").f, linear_ref(h, w_lut, b16, 8), 1e-4f);
}

TEST(MilSampleWeights, GroupedLutsFeedConvAndLinear) {
    const std::string rel = "coreml-samples/palettized.mlpackage";
    ANELM_REQUIRE_SHARED(rel);
    const coreml::Package pkg(anelm::test::shared_path(rel));
    const auto& ops = main_ops(pkg);
    auto input_value = [&](int op, const char* key) -> const mil::Value& {
        return ops[op].inputs().at(key).arguments(0).value();
    };
    // conv weight [32, 16]: uint4 codes, LUT [8, 1, 16, 1]: rows 4g..4g+3 use palette g.
    const coreml::Blob idx4 = pkg.blob(input_value(0, "indices"));
    const coreml::Blob lut4 = pkg.blob(input_value(0, "lut"));
    std::vector<float> w_conv(32 * 16);
    for (int k = 0; k < 32 * 16; ++k)
        w_conv[k] = half_at(lut4.data.data(), k / 16 / 4 * 16 + code_at(idx4.data.data(), k, 4));
    // linear weight [16, 32]: uint2 codes, immediate LUT [2, 1, 4, 1]: rows 8g..8g+7 use palette g.
    int lin = 0;
    for (int k = 0; k < ops.size(); ++k)
        if (ops[k].type() == "constexpr_lut_to_dense") lin = k;
    const coreml::Blob idx2 = pkg.blob(input_value(lin, "indices"));
    const uint8_t* lut2 = immediate_bytes(input_value(lin, "lut"));
    std::vector<float> w_lin(16 * 32), bias(16);
    for (int k = 0; k < 16 * 32; ++k)
        w_lin[k] = half_at(lut2, k / 32 / 8 * 4 + code_at(idx2.data.data(), k, 2));
    const coreml::Blob b = pkg.blob(ops[ops.size() - 2].attributes().at("val"));
    for (int k = 0; k < 16; ++k) bias[k] = half_at(b.data.data(), k);

    const Function f(pkg.model().mlprogram(), "main", pkg, Rounding::none);
    States states;
    const std::vector<float> x = ramp(16 * 8, 0.0625f);  // [1, 16, 1, 8]
    const auto out = f.run({{"x", floats(mil::FLOAT16, {1, 16, 1, 8}, x)}}, states);
    // conv 1x1 over [C, S] then the transpose to [S, C] is a linear over x transposed.
    std::vector<float> xt(8 * 16);
    for (int c = 0; c < 16; ++c)
        for (int s = 0; s < 8; ++s) xt[s * 16 + c] = x[c * 8 + s];
    const std::vector<float> h = linear_ref(xt, w_conv, std::vector<float>(32, 0.0f), 16);
    expect_near(out.at("linear_lut").f, linear_ref(h, w_lin, bias, 32), 1e-4f);
}

}  // namespace
}  // namespace anelm::milexec::test
