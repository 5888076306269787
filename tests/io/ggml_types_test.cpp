#include "io/ggml_types.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/half.h"
#include "io/io_test_util.h"

namespace anelm {
namespace {

using test::expect_error;

GgmlType type_named(std::string_view name) {
    for (uint32_t id = 0; id < 64; ++id)
        if (const auto info = ggml_type_info(id); info && info->name == name)
            return static_cast<GgmlType>(id);
    ADD_FAILURE() << "no ggml type named " << name;
    return GgmlType::f32;
}

std::vector<float> dequantize(GgmlType type, const std::vector<uint8_t>& bytes, int64_t n) {
    std::vector<float> out(static_cast<size_t>(n), -1.0f);
    dequantize_row(type, reinterpret_cast<const std::byte*>(bytes.data()), out.data(), n);
    return out;
}

void put_half(std::vector<uint8_t>& block, size_t at, float value) {
    const uint16_t h = f32_to_f16(value);
    block[at] = static_cast<uint8_t>(h & 0xff);
    block[at + 1] = static_cast<uint8_t>(h >> 8);
}

// tests/data/ggml/TYPE.bin: random blocks, then ggml's f32 values of them
// (README.md there says how they were made).
class GgmlReference : public ::testing::TestWithParam<std::string> {};

TEST_P(GgmlReference, MatchesGgmlBitForBit) {
    const GgmlType type = type_named(GetParam());
    const GgmlTypeInfo info = *ggml_type_info(static_cast<uint32_t>(type));
    const std::string path =
        std::string(ANELM_SOURCE_DIR) + "/tests/data/ggml/" + GetParam() + ".bin";
    const std::string file = test::read_file(path);
    const int64_t per_block = info.block_bytes + 4 * info.block_elems;
    ASSERT_GT(file.size(), 0u) << path;
    ASSERT_EQ(static_cast<int64_t>(file.size()) % per_block, 0) << path;
    const int64_t n = static_cast<int64_t>(file.size()) / per_block * info.block_elems;
    const size_t row_bytes = ggml_row_bytes(type, n);

    // One byte in, so the blocks sit at odd addresses as they may in a file.
    std::vector<uint8_t> shifted(row_bytes + 1);
    std::memcpy(shifted.data() + 1, file.data(), row_bytes);
    std::vector<float> got(static_cast<size_t>(n));
    dequantize_row(type, reinterpret_cast<const std::byte*>(shifted.data() + 1), got.data(), n);

    int nan_count = 0;
    for (int64_t i = 0; i < n; ++i) {
        uint32_t want_bits = 0;
        std::memcpy(&want_bits, file.data() + row_bytes + 4 * i, 4);
        const float want = std::bit_cast<float>(want_bits);
        if (std::isnan(want) && type != GgmlType::f32) {
            EXPECT_TRUE(std::isnan(got[i])) << GetParam() << " element " << i;
            ++nan_count;
            continue;
        }
        ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), want_bits)
            << GetParam() << " element " << i << ": got " << got[i] << ", ggml " << want;
    }
    // The quantized rows hold only finite values; a NaN there would be a bad file.
    if (info.block_elems > 1) {
        EXPECT_EQ(nan_count, 0);
    }
}

INSTANTIATE_TEST_SUITE_P(EveryDequantizableType, GgmlReference,
                         ::testing::Values("F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1",
                                           "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K",
                                           "IQ4_NL"),
                         [](const auto& param) { return param.param; });

TEST(GgmlDequantize, Q8_0IsCodeTimesScale) {
    // d = 0.5, codes -16 .. 15, then -128 and 127 at the ends of a second block.
    std::vector<uint8_t> row(2 * 34, 0);
    put_half(row, 0, 0.5f);
    for (int j = 0; j < 32; ++j) row[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
    put_half(row, 34, -2.0f);
    row[36] = 0x80;  // -128
    row[67] = 0x7f;  // 127
    const std::vector<float> y = dequantize(GgmlType::q8_0, row, 64);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], (j - 16) * 0.5f) << j;
    EXPECT_EQ(y[32], 256.0f);
    EXPECT_EQ(y[63], -254.0f);
    EXPECT_EQ(std::bit_cast<uint32_t>(y[40]), 0x80000000u);  // 0 * -2 = -0
}

TEST(GgmlDequantize, Q4_0LowNibblesFirstThenHigh) {
    // d = 0.25; byte j holds code j in its low nibble and 15 - j in its high one,
    // so element j = (j - 8) * d and element j + 16 = (15 - j - 8) * d.
    std::vector<uint8_t> row(18, 0);
    put_half(row, 0, 0.25f);
    for (int j = 0; j < 16; ++j) row[2 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
    const std::vector<float> y = dequantize(GgmlType::q4_0, row, 32);
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(y[j], (j - 8) * 0.25f) << j;
        EXPECT_EQ(y[j + 16], (7 - j) * 0.25f) << j;
    }
}

TEST(GgmlDequantize, Q4_KUnpacksSixBitScalesAndMins) {
    // Sub-block s (32 elements) has x = d * scale[s] * q - dmin * min[s]. The
    // scales and mins of sub-blocks 4-7 need all 6 bits: their low nibbles go
    // to bytes 8-11 (scale low, min high), their top 2 bits to the top of
    // bytes 0-3 (scale) and 4-7 (min), above sub-blocks 0-3's own 6 bits.
    const int scale[8] = {1, 2, 3, 63, 17, 33, 49, 62};
    const int min[8] = {0, 5, 10, 63, 16, 32, 48, 7};
    std::vector<uint8_t> row(144, 0);
    put_half(row, 0, 1.0f);
    put_half(row, 2, 0.5f);
    for (int j = 0; j < 4; ++j) {
        row[4 + j] = static_cast<uint8_t>(scale[j] | (scale[j + 4] >> 4) << 6);
        row[8 + j] = static_cast<uint8_t>(min[j] | (min[j + 4] >> 4) << 6);
        row[12 + j] = static_cast<uint8_t>((scale[j + 4] & 0xF) | (min[j + 4] & 0xF) << 4);
    }
    // 64 elements per 32 bytes: low nibbles code l % 16 (sub-block 2k), high 15 - l % 16 (2k + 1).
    for (int k = 0; k < 4; ++k)
        for (int l = 0; l < 32; ++l)
            row[16 + 32 * k + l] = static_cast<uint8_t>((l % 16) | (15 - l % 16) << 4);
    const std::vector<float> y = dequantize(GgmlType::q4_k, row, 256);
    for (int k = 0; k < 4; ++k) {
        for (int l = 0; l < 32; ++l) {
            const float low = 1.0f * scale[2 * k] * (l % 16) - 0.5f * min[2 * k];
            const float high = 1.0f * scale[2 * k + 1] * (15 - l % 16) - 0.5f * min[2 * k + 1];
            EXPECT_EQ(y[64 * k + l], low) << "sub-block " << 2 * k << " element " << l;
            EXPECT_EQ(y[64 * k + 32 + l], high) << "sub-block " << 2 * k + 1 << " element " << l;
        }
    }
}

TEST(GgmlDequantize, Q3_KScalesAndInvertedHighBit) {
    // 16 groups of 16, x = d * (scale[g] - 32) * q. Scale g's low 4 bits are the
    // low nibble of byte g (g < 8) or the high nibble of byte g - 8; its top 2
    // bits are bits 2*(g/4) of byte 8 + g%4. q = 2 low bits, minus 4 when the
    // element's bit in the high-bit mask is clear.
    int scale[16];
    for (int g = 0; g < 16; ++g) scale[g] = (g * 37 + 5) % 64;
    std::vector<uint8_t> row(110, 0);
    for (int g = 0; g < 16; ++g) {
        row[96 + g % 8] |= static_cast<uint8_t>((scale[g] & 0xF) << (g < 8 ? 0 : 4));
        row[96 + 8 + g % 4] |= static_cast<uint8_t>((scale[g] >> 4) << (2 * (g / 4)));
    }
    put_half(row, 108, 0.125f);
    // Every 2-bit code is 3; mask bits set for even elements of each group only.
    for (int i = 0; i < 64; ++i) row[32 + i] = 0xff;
    for (int i = 0; i < 32; ++i) row[i] = (i % 2 == 0) ? 0xff : 0x00;
    const std::vector<float> y = dequantize(GgmlType::q3_k, row, 256);
    for (int e = 0; e < 256; ++e) {
        const int g = e / 16;
        const int q = (e % 2 == 0) ? 3 : 3 - 4;
        EXPECT_EQ(y[e], 0.125f * (scale[g] - 32) * q) << "element " << e;
    }
}

TEST(GgmlDequantize, RejectsTypesItCannotReadAndPartialBlocks) {
    std::vector<float> out(256);
    const std::vector<std::byte> bytes(1024);
    expect_error([&] { dequantize_row(GgmlType::iq2_xxs, bytes.data(), out.data(), 256); },
                 {"IQ2_XXS", "cannot be dequantized"});
    expect_error([&] { dequantize_row(GgmlType::q8_1, bytes.data(), out.data(), 32); }, {"Q8_1"});
    expect_error([&] { dequantize_row(GgmlType::q4_k, bytes.data(), out.data(), 100); },
                 {"Q4_K", "100", "256"});
}

struct Expected {
    uint32_t id;
    std::string_view name;
    int64_t elems, bytes;
    bool dequantizable;
};

TEST(GgmlTypeInfo, EveryTypeGgmlDefines) {
    // ggml's type traits at llama.cpp d32676d; names as gguf-py spells them.
    const Expected table[] = {
        {0, "F32", 1, 4, true},          {1, "F16", 1, 2, true},
        {2, "Q4_0", 32, 18, true},       {3, "Q4_1", 32, 20, true},
        {6, "Q5_0", 32, 22, true},       {7, "Q5_1", 32, 24, true},
        {8, "Q8_0", 32, 34, true},       {9, "Q8_1", 32, 36, false},
        {10, "Q2_K", 256, 84, true},     {11, "Q3_K", 256, 110, true},
        {12, "Q4_K", 256, 144, true},    {13, "Q5_K", 256, 176, true},
        {14, "Q6_K", 256, 210, true},    {15, "Q8_K", 256, 292, true},
        {16, "IQ2_XXS", 256, 66, false}, {17, "IQ2_XS", 256, 74, false},
        {18, "IQ3_XXS", 256, 98, false}, {19, "IQ1_S", 256, 50, false},
        {20, "IQ4_NL", 32, 18, true},    {21, "IQ3_S", 256, 110, false},
        {22, "IQ2_S", 256, 82, false},   {23, "IQ4_XS", 256, 136, false},
        {24, "I8", 1, 1, false},         {25, "I16", 1, 2, false},
        {26, "I32", 1, 4, false},        {27, "I64", 1, 8, false},
        {28, "F64", 1, 8, false},        {29, "IQ1_M", 256, 56, false},
        {30, "BF16", 1, 2, true},        {34, "TQ1_0", 256, 54, false},
        {35, "TQ2_0", 256, 66, false},   {39, "MXFP4", 32, 17, false},
        {40, "NVFP4", 64, 36, false},    {41, "Q1_0", 128, 18, false},
        {42, "Q2_0", 64, 18, false},
    };
    for (const Expected& e : table) {
        const auto info = ggml_type_info(e.id);
        ASSERT_TRUE(info.has_value()) << e.id;
        EXPECT_EQ(info->name, e.name) << e.id;
        EXPECT_EQ(info->block_elems, e.elems) << e.name;
        EXPECT_EQ(info->block_bytes, e.bytes) << e.name;
        EXPECT_EQ(info->dequantizable, e.dequantizable) << e.name;
        EXPECT_EQ(ggml_type_name(e.id), e.name);
    }
    // Removed from ggml, or never defined.
    for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 43u, 1000u, 0xffffffffu})
        EXPECT_FALSE(ggml_type_info(id).has_value()) << id;
    EXPECT_EQ(ggml_type_name(37), "type 37");
}

TEST(GgmlTypeInfo, RowBytes) {
    EXPECT_EQ(ggml_row_bytes(GgmlType::q4_k, 4096), 16u * 144u);
    EXPECT_EQ(ggml_row_bytes(GgmlType::q6_k, 512), 2u * 210u);
    EXPECT_EQ(ggml_row_bytes(GgmlType::q8_0, 64), 68u);
    EXPECT_EQ(ggml_row_bytes(GgmlType::f16, 3), 6u);
    EXPECT_EQ(ggml_row_bytes(GgmlType::bf16, 0), 0u);
    EXPECT_EQ(ggml_row_bytes(GgmlType::iq2_xxs, 256), 66u);
    expect_error([] { ggml_row_bytes(GgmlType::q4_k, 100); }, {"Q4_K", "100", "256-element"});
    expect_error([] { ggml_row_bytes(GgmlType::iq4_nl, 48); }, {"IQ4_NL", "48", "32-element"});
    expect_error([] { ggml_row_bytes(GgmlType::q8_0, -32); }, {"Q8_0", "-32"});
    expect_error([] { ggml_row_bytes(static_cast<GgmlType>(4), 32); }, {"ggml type 4"});
}

}  // namespace
}  // namespace anelm
