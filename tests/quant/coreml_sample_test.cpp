// Our code layout against a package coremltools wrote: the index blob of an
// iOS18 constexpr_lut_to_dense (uint4 [32, 16], lut f16 [8, 1, 16, 1]) is
// taken as is and decodes to lut[row / 4][code].
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "base/bit_packing.h"
#include "base/half.h"
#include "kernels/quant_kernels.h"
#include "quant/quantized_matrix.h"
#include "test_support.h"

namespace anelm::quant {
namespace {

constexpr const char* weights =
    "coreml-samples/palettized.mlpackage/Data/com.apple.CoreML/weights/weight.bin";

template <typename T>
T read_le(const std::vector<uint8_t>& file, size_t offset) {
    T v;
    std::memcpy(&v, file.data() + offset, sizeof(T));
    return v;
}

// The payload of the MILBlob record at `offset`, checking its dtype code.
std::vector<uint8_t> blob(const std::vector<uint8_t>& file, size_t offset, uint32_t dtype) {
    EXPECT_EQ(read_le<uint32_t>(file, offset), 0xdeadbeefu);
    EXPECT_EQ(read_le<uint32_t>(file, offset + 4), dtype);
    const auto size = read_le<uint64_t>(file, offset + 8),
               data = read_le<uint64_t>(file, offset + 16);
    return {file.begin() + static_cast<ptrdiff_t>(data),
            file.begin() + static_cast<ptrdiff_t>(data + size)};
}

TEST(CoreMLSample, PalettizedIndicesAndLutMapOntoQuantizedMatrix) {
    ANELM_REQUIRE_SHARED(weights);
    std::ifstream in(test::shared_path(weights), std::ios::binary);
    const std::vector<uint8_t> file{std::istreambuf_iterator<char>(in), {}};

    QuantizedMatrix q;
    q.kind = QuantKind::lut;
    q.nbits = 4;
    q.n_out = 32;
    q.n_in = 16;
    q.group_size = 4;
    const std::vector<uint8_t> code_bytes =
        blob(file, 64, 11);  // UInt4, offsets from model.mlmodel
    q.codes.assign(code_bytes.begin(), code_bytes.end());
    const std::vector<uint8_t> lut_bytes = blob(file, 384, 1);  // Float16
    ASSERT_EQ(static_cast<int64_t>(q.codes.size()), q.n_out * q.row_bytes());
    ASSERT_EQ(lut_bytes.size(), 8u * 16 * 2);
    q.lut.resize(8 * 16);
    std::memcpy(q.lut.data(), lut_bytes.data(), lut_bytes.size());

    EXPECT_EQ(coreml_lut_shape(q), (std::array<int64_t, 4>{8, 1, 16, 1}));
    EXPECT_EQ(coreml_codes(q), code_bytes);

    // Element (o, i) is code o * 16 + i of the LSB-first stream, looked up in table o / 4.
    std::vector<uint8_t> stream(32 * 16);
    unpack_codes(q.codes.data(), 32 * 16, 4, stream.data());
    std::vector<float> row(16), x(16, 0.0f);
    ThreadPool pool(2);
    for (int64_t o = 0; o < 32; ++o) {
        q.decode_row(o, row.data());
        for (int64_t i = 0; i < 16; ++i) {
            const float want =
                f16_to_f32(q.lut[static_cast<size_t>((o / 4) * 16 + stream[o * 16 + i])]);
            ASSERT_EQ(row[static_cast<size_t>(i)], want) << o << ", " << i;
            // The matmul of a unit vector picks the same column.
            x.assign(16, 0.0f);
            x[static_cast<size_t>(i)] = 1.0f;
            std::vector<float> y(32);
            kernels::quant_matmul(q.view(), x.data(), 1, y.data(), pool);
            ASSERT_EQ(y[static_cast<size_t>(o)], want);
        }
    }
}

}  // namespace
}  // namespace anelm::quant
