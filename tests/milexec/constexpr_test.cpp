// constexpr_* weights decoded at compile time: a per-grouped-channel LUT
// (iOS18 form) and blockwise shift-and-scale with an offset.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <map>
#include <random>

#include "base/bit_packing.h"
#include "base/half.h"
#include "kernels/quant_kernels.h"
#include "mil_program.h"
#include "quant/quant_testing.h"

namespace anelm::milexec::test {
namespace {

std::vector<uint8_t> f16_bytes(const std::vector<float>& v) {
    std::vector<uint8_t> out;
    for (float x : v) {
        const uint16_t h = f32_to_f16(x);
        out.push_back(static_cast<uint8_t>(h & 0xff));
        out.push_back(static_cast<uint8_t>(h >> 8));
    }
    return out;
}

TEST(MilConstexpr, LutToDenseWithGroupedChannels) {
    // w [4, 3] from 2-bit codes; rows 0-1 read palette 0, rows 2-3 palette 1.
    MilProgram p;
    const std::vector<uint8_t> codes = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3};
    auto packed = std::make_shared<std::vector<uint8_t>>(packed_bytes(12, 2));
    pack_codes(codes.data(), 12, 2, packed->data());
    const std::vector<float> lut = {-1, 0, 0.5f, 2, 10, 20, 30, 40};
    auto lut_bytes = std::make_shared<std::vector<uint8_t>>(f16_bytes(lut));
    const MilValue w = p.b.op_literal(
        "constexpr_lut_to_dense", "w",
        {{"indices", coreml::blob_value(p.blobs, mil::UINT2, {4, 3}, *packed, packed)},
         {"lut", coreml::blob_value(p.blobs, mil::FLOAT16, {2, 1, 4, 1}, *lut_bytes, lut_bytes)}},
        mil::FLOAT16, {4, 3});
    const MilValue x = p.input("x", mil::FLOAT32, {1, 3});
    p.b.output(w);
    p.b.output(p.b.op("linear", "y", {{"x", x}, {"weight", w}}, mil::FLOAT32, {1, 4}));
    auto out = p.run({{"x", floats(mil::FLOAT32, {1, 3}, {1, 2, 4})}});
    std::vector<float> want_w;
    for (size_t k = 0; k < codes.size(); ++k) want_w.push_back(lut[k / 6 * 4 + codes[k]]);
    EXPECT_EQ(out.at("w").f, want_w);
    std::vector<float> want_y;
    for (int r = 0; r < 4; ++r)
        want_y.push_back(want_w[r * 3] + 2 * want_w[r * 3 + 1] + 4 * want_w[r * 3 + 2]);
    expect_near(out.at("y").f, want_y);
}

TEST(MilConstexpr, LutToDenseForAConvWeight) {
    // w [4, 3, 1, 1] with LUT [2, 1, 1, 1, 4, 1]: output channels 0-1 palette 0, 2-3 palette 1.
    MilProgram p;
    const std::vector<uint8_t> codes = {3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 0};
    auto packed = std::make_shared<std::vector<uint8_t>>(packed_bytes(12, 2));
    pack_codes(codes.data(), 12, 2, packed->data());
    const std::vector<float> lut = {1, 2, 3, 4, -1, -2, -3, -4};
    auto lut_bytes = std::make_shared<std::vector<uint8_t>>(f16_bytes(lut));
    p.b.output(p.b.op_literal(
        "constexpr_lut_to_dense", "w",
        {{"indices", coreml::blob_value(p.blobs, mil::UINT2, {4, 3, 1, 1}, *packed, packed)},
         {"lut",
          coreml::blob_value(p.blobs, mil::FLOAT16, {2, 1, 1, 1, 4, 1}, *lut_bytes, lut_bytes)}},
        mil::FLOAT16, {4, 3, 1, 1}));
    auto out = p.run({});
    std::vector<float> want;
    for (size_t k = 0; k < codes.size(); ++k) want.push_back(lut[k / 6 * 4 + codes[k]]);
    EXPECT_EQ(out.at("w").f, want);
}

TEST(MilConstexpr, LutBoundByNameToAnotherConstant) {
    // The palette comes from a const op (joint compression binds by name).
    MilProgram p;
    const std::vector<float> lut = {0.5f, -0.5f};
    const MilValue palette = p.b.const_f16("palette", {1, 1, 2, 1}, lut);
    const std::vector<uint8_t> codes = {1, 0, 0, 1};
    auto packed = std::make_shared<std::vector<uint8_t>>(packed_bytes(4, 1));
    pack_codes(codes.data(), 4, 1, packed->data());
    const MilValue w = p.b.op_literal(
        "constexpr_lut_to_dense", "w",
        {{"indices", coreml::blob_value(p.blobs, mil::UINT1, {2, 2}, *packed, packed)}},
        mil::FLOAT16, {2, 2});
    mil::Block& block = p.fn->mutable_block_specializations()->at("CoreML8");
    mil::Operation& op = *block.mutable_operations(block.operations_size() - 1);
    (*op.mutable_inputs())["lut"].add_arguments()->set_name(palette.name);
    p.b.output(w);
    EXPECT_EQ(p.run({}).at("w").f, (std::vector<float>{-0.5f, 0.5f, 0.5f, -0.5f}));
}

TEST(MilConstexpr, BlockwiseShiftScaleWithOffset) {
    // data int8 [2, 4], blocks of 2 along the columns: scale and offset [2, 2].
    MilProgram p;
    auto data = std::make_shared<std::vector<uint8_t>>(
        std::vector<uint8_t>{1, 2, 3, 4, 0xff, 0xfe, 10, 20});  // -1, -2 as int8
    auto scale = std::make_shared<std::vector<uint8_t>>(f16_bytes({0.5f, 2, 1, -1}));
    auto offset = std::make_shared<std::vector<uint8_t>>(std::vector<uint8_t>{1, 0, 0xff, 10});
    const MilValue w = p.b.op_literal(
        "constexpr_blockwise_shift_scale", "w",
        {{"data", coreml::blob_value(p.blobs, mil::INT8, {2, 4}, *data, data)},
         {"scale", coreml::blob_value(p.blobs, mil::FLOAT16, {2, 2}, *scale, scale)},
         {"offset", coreml::blob_value(p.blobs, mil::INT8, {2, 2}, *offset, offset)}},
        mil::FLOAT16, {2, 4});
    p.b.output(w);
    auto out = p.run({});
    EXPECT_EQ(out.at("w").f, (std::vector<float>{0.5f * 0, 0.5f * 1, 2 * 3, 2 * 4,  //
                                                 1 * (-1 + 1), 1 * (-2 + 1), -1 * 0, -1 * 10}));
}

// A 4-bit palettized weight [32, 16] (tables for groups of 8 rows) read by a
// 1x1 conv, by linear and by matmul x @ yᵀ: the products read its codes, and
// give what the dense weight gives; read by anything else it is made dense.
TEST(MilConstexpr, PalettizedWeightsMultipliedFromTheirCodes) {
    constexpr int64_t n_out = 32, n_in = 16, groups = 4, positions = 5;
    std::vector<uint8_t> codes;
    for (int64_t o = 0; o < n_out; ++o)
        for (int64_t i = 0; i < n_in; ++i)
            codes.push_back(static_cast<uint8_t>((o * 7 + i * 3) % 16));
    auto packed = std::make_shared<std::vector<uint8_t>>(packed_bytes(n_out * n_in, 4));
    pack_codes(codes.data(), n_out * n_in, 4, packed->data());
    std::vector<float> lut;
    for (int64_t g = 0; g < groups; ++g)
        for (int e = 0; e < 16; ++e) lut.push_back((e - 7.5f) * 0.125f * (g + 1));
    auto lut_bytes = std::make_shared<std::vector<uint8_t>>(f16_bytes(lut));
    const auto dense = [&](int64_t o, int64_t i) {
        return lut[static_cast<size_t>(o / (n_out / groups) * 16 + codes[o * n_in + i])];
    };
    const std::vector<float> xv = ramp(n_in * positions, 0.3f);
    for (const bool also_an_output : {false, true}) {
        SCOPED_TRACE(also_an_output ? "the conv weight is also an output" : "products only");
        MilProgram p;
        const auto weight = [&](const std::string& name, std::vector<int64_t> shape,
                                std::vector<int64_t> lut_shape) {
            return p.b.op_literal(
                "constexpr_lut_to_dense", name,
                {{"indices", coreml::blob_value(p.blobs, mil::UINT4, shape, *packed, packed)},
                 {"lut",
                  coreml::blob_value(p.blobs, mil::FLOAT16, lut_shape, *lut_bytes, lut_bytes)}},
                mil::FLOAT16, shape);
        };
        const MilValue w4 = weight("w4", {n_out, n_in, 1, 1}, {groups, 1, 1, 1, 16, 1});
        const MilValue w2 = weight("w2", {n_out, n_in}, {groups, 1, 16, 1});
        const MilValue x = p.input("x", mil::FLOAT32, {1, n_in, 1, positions});
        const MilValue rows = p.input("rows", mil::FLOAT32, {positions, n_in});
        p.b.output(p.b.op("conv", "conv", {{"x", x}, {"weight", w4}}, mil::FLOAT32,
                          {1, n_out, 1, positions}));
        p.b.output(p.b.op("linear", "linear", {{"x", rows}, {"weight", w2}}, mil::FLOAT32,
                          {positions, n_out}));
        p.b.output(p.b.op("matmul", "matmul",
                          {{"x", rows},
                           {"y", w2},
                           {"transpose_x", MilParam::boolean(false)},
                           {"transpose_y", MilParam::boolean(true)}},
                          mil::FLOAT32, {positions, n_out}));
        if (also_an_output) p.b.output(w4);
        States states;
        const Function f(p.program, "main", p.blobs, Rounding::none);
        EXPECT_EQ(f.weights_kept_as_codes(), also_an_output ? 1 : 2);
        // rows[t] is x at position t.
        std::vector<float> rows_v(static_cast<size_t>(positions * n_in));
        for (int64_t t = 0; t < positions; ++t)
            for (int64_t i = 0; i < n_in; ++i) rows_v[t * n_in + i] = xv[i * positions + t];
        auto out = f.run({{"x", floats(mil::FLOAT32, {1, n_in, 1, positions}, xv)},
                          {"rows", floats(mil::FLOAT32, {positions, n_in}, rows_v)}},
                         states);
        std::vector<float> want_conv(static_cast<size_t>(n_out * positions)), want_rows;
        for (int64_t t = 0; t < positions; ++t)
            for (int64_t o = 0; o < n_out; ++o) {
                double sum = 0;
                for (int64_t i = 0; i < n_in; ++i) sum += dense(o, i) * rows_v[t * n_in + i];
                want_conv[o * positions + t] = static_cast<float>(sum);
                want_rows.push_back(static_cast<float>(sum));
            }
        expect_near(out.at("conv").f, want_conv);
        expect_near(out.at("linear").f, want_rows);
        expect_near(out.at("matmul").f, want_rows);
        if (!also_an_output) continue;
        for (int64_t o = 0; o < n_out; ++o)
            for (int64_t i = 0; i < n_in; ++i) EXPECT_EQ(out.at("w4").f[o * n_in + i], dense(o, i));
    }
}

// LUT4 and LUT6 weights [48, 256] read by linear (one token and five) and by
// a 1x1 conv: with QuantDot::int8 the products are the CPU executor's integer
// dot products of the same matrix (activations rounded to int8 per block,
// tables to int8), value for value; with exact, its exact products.
TEST(MilConstexpr, PalettizedWeightsTakeTheProductsAsked) {
    constexpr int64_t n_out = 48, n_in = 256, positions = 5;
    std::mt19937 rng(3);
    const std::vector<float> xv = ramp(n_in * positions, 0.37f);
    std::vector<float> rows_v(static_cast<size_t>(positions * n_in));  // rows[t] = x at t
    for (int64_t t = 0; t < positions; ++t)
        for (int64_t i = 0; i < n_in; ++i) rows_v[t * n_in + i] = xv[i * positions + t];
    ThreadPool pool(2);
    for (const auto& [nbits, group] : {std::pair{4, 8}, std::pair{6, 0}}) {
        SCOPED_TRACE("lut" + std::to_string(nbits));
        quant::QuantizedMatrix q =
            anelm::test::random_quantized(rng, kernels::QuantKind::lut, nbits, n_out, n_in, group);
        auto codes = std::make_shared<std::vector<uint8_t>>(quant::coreml_codes(q));
        auto lut = std::make_shared<std::vector<uint8_t>>(q.lut.size() * 2);
        std::memcpy(lut->data(), q.lut.data(), lut->size());
        const std::array<int64_t, 4> lut_shape = quant::coreml_lut_shape(q);
        const mil::DataType code_type = nbits == 4 ? mil::UINT4 : mil::UINT6;
        MilProgram p;
        const auto weight = [&](const std::string& name, std::vector<int64_t> shape,
                                std::vector<int64_t> table_shape) {
            return p.b.op_literal(
                "constexpr_lut_to_dense", name,
                {{"indices", coreml::blob_value(p.blobs, code_type, shape, *codes, codes)},
                 {"lut", coreml::blob_value(p.blobs, mil::FLOAT16, table_shape, *lut, lut)}},
                mil::FLOAT16, shape);
        };
        const MilValue w2 = weight("w2", {n_out, n_in}, {lut_shape.begin(), lut_shape.end()});
        const MilValue w4 =
            weight("w4", {n_out, n_in, 1, 1}, {lut_shape[0], 1, 1, 1, lut_shape[2], 1});
        const MilValue one = p.input("one", mil::FLOAT32, {1, n_in});
        const MilValue rows = p.input("rows", mil::FLOAT32, {positions, n_in});
        const MilValue x = p.input("x", mil::FLOAT32, {1, n_in, 1, positions});
        p.b.output(
            p.b.op("linear", "linear_one", {{"x", one}, {"weight", w2}}, mil::FLOAT32, {1, n_out}));
        p.b.output(p.b.op("linear", "linear_rows", {{"x", rows}, {"weight", w2}}, mil::FLOAT32,
                          {positions, n_out}));
        p.b.output(p.b.op("conv", "conv", {{"x", x}, {"weight", w4}}, mil::FLOAT32,
                          {1, n_out, 1, positions}));
        const std::map<std::string, Tensor> inputs = {
            {"one", floats(mil::FLOAT32, {1, n_in}, {rows_v.begin(), rows_v.begin() + n_in})},
            {"rows", floats(mil::FLOAT32, {positions, n_in}, rows_v)},
            {"x", floats(mil::FLOAT32, {1, n_in, 1, positions}, xv)}};
        std::map<QuantDot, std::vector<float>> products;
        for (const QuantDot dot : {QuantDot::exact, QuantDot::int8}) {
            SCOPED_TRACE(dot == QuantDot::int8 ? "int8" : "exact");
            quant::QuantizedMatrix cpu = q;
            if (dot == QuantDot::int8) cpu.use_int8_dot();
            std::vector<float> want(static_cast<size_t>(positions * n_out));
            std::vector<float> want_one(static_cast<size_t>(n_out));
            kernels::quant_matmul(cpu.view(), rows_v.data(), positions, want.data(), pool);
            kernels::quant_matmul(cpu.view(), rows_v.data(), 1, want_one.data(), pool);
            States states;
            const Function f(p.program, "main", p.blobs, Rounding::none, &pool, dot);
            EXPECT_EQ(f.weights_kept_as_codes(), 2);
            auto out = f.run(inputs, states);
            EXPECT_EQ(out.at("linear_rows").f, want);
            EXPECT_EQ(out.at("linear_one").f, want_one);
            std::vector<float> conv_rows(want.size());
            for (int64_t t = 0; t < positions; ++t)
                for (int64_t o = 0; o < n_out; ++o)
                    conv_rows[t * n_out + o] = out.at("conv").f[o * positions + t];
            EXPECT_EQ(conv_rows, want);
            products[dot] = want;
        }
        EXPECT_NE(products[QuantDot::int8], products[QuantDot::exact]);
    }
}

}  // namespace
}  // namespace anelm::milexec::test
