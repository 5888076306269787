#include "io/tensor_values.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "base/half.h"
#include "io/ggml_types.h"
#include "io/io_test_util.h"

namespace anelm {
namespace {

using test::expect_error;

// Q4_K blocks of random bytes with finite scales: a [rows, 512] matrix.
std::vector<std::byte> random_q4_k(int64_t rows, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<std::byte> bytes(static_cast<size_t>(rows * 2 * 144));
    for (auto& b : bytes) b = static_cast<std::byte>(rng() & 0xff);
    for (size_t block = 0; block < bytes.size(); block += 144)
        for (size_t at : {size_t{0}, size_t{2}}) {
            const uint16_t h = f32_to_f16(0.01f * static_cast<float>(rng() % 100 + 1));
            std::memcpy(&bytes[block + at], &h, 2);
        }
    return bytes;
}

TensorView q4_k_view(const std::vector<std::byte>& bytes, int64_t rows) {
    TensorView v{DType::blocks, {rows, 512}, bytes.data()};
    v.block_type = static_cast<uint32_t>(GgmlType::q4_k);
    v.block_elems = 256;
    v.block_bytes = 144;
    return v;
}

TEST(ReadF32, AnyRangeOfBlocksIsTheSliceOfTheDecodedTensor) {
    const int64_t rows = 3;
    const auto bytes = random_q4_k(rows, 7);
    const TensorView w = q4_k_view(bytes, rows);
    std::vector<float> whole(static_cast<size_t>(w.numel()));
    dequantize_row(GgmlType::q4_k, bytes.data(), whole.data(), w.numel());
    // Inside one block, across block and row edges, whole blocks, the end.
    const std::vector<std::pair<int64_t, int64_t>> ranges = {
        {0, 1}, {5, 17}, {250, 12}, {256, 256}, {300, 700}, {511, 2}, {0, 1536}, {1535, 1}, {7, 0}};
    for (const auto& [begin, n] : ranges) {
        SCOPED_TRACE(testing::Message() << begin << "+" << n);
        std::vector<float> got(static_cast<size_t>(n) + 1, -99.0f);
        read_f32(w, begin, n, got.data());
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], whole[begin + i]) << i;
        EXPECT_EQ(got[n], -99.0f);  // nothing written past n
    }
}

TEST(ReadF32, WidensHalfAndBrainFloatAndCopiesFloat) {
    const std::vector<float> values = {1.5f, -2.25f, 65504.0f, 3e-5f, 0.0f};
    std::vector<uint16_t> half, brain;
    for (float v : values) {
        half.push_back(f32_to_f16(v));
        brain.push_back(f32_to_bf16(v));
    }
    std::vector<float> got(3);
    read_f32({DType::f16, {5}, reinterpret_cast<const std::byte*>(half.data())}, 2, 3, got.data());
    EXPECT_EQ(got, (std::vector<float>{65504.0f, f16_to_f32(half[3]), 0.0f}));
    read_f32({DType::bf16, {5}, reinterpret_cast<const std::byte*>(brain.data())}, 0, 3,
             got.data());
    EXPECT_EQ(got, (std::vector<float>{1.5f, -2.25f, bf16_to_f32(brain[2])}));
    read_f32({DType::f32, {5}, reinterpret_cast<const std::byte*>(values.data())}, 1, 3,
             got.data());
    EXPECT_EQ(got, (std::vector<float>{-2.25f, 65504.0f, 3e-5f}));
}

TEST(ReadF32, RefusesRangesOutsideAndIntegerTensors) {
    const std::vector<float> values(4, 1.0f);
    const TensorView w{DType::f32, {2, 2}, reinterpret_cast<const std::byte*>(values.data())};
    std::vector<float> out(8);
    expect_error([&] { read_f32(w, 2, 3, out.data()); }, {"elements 2 to 5", "of 4"});
    expect_error([&] { read_f32(w, -1, 1, out.data()); }, {"elements -1"});
    const TensorView ints{DType::i32, {2, 2}, w.data};
    expect_error([&] { read_f32(ints, 0, 1, out.data()); }, {"i32", "no float values"});
}

}  // namespace
}  // namespace anelm
