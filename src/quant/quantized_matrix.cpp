#include "quant/quantized_matrix.h"

#include <cstring>

#include "base/bit_packing.h"
#include "base/error.h"
#include "io/ggml_types.h"

namespace anelm::quant {

int64_t QuantizedMatrix::storage_bytes() const {
    size_t bytes = codes.size() + 2 * lut.size() + 2 * scales.size();
    if (int8_dot) bytes += int8_dot->dot_lut.size() + 4 * int8_dot->dot_scale.size();
    return static_cast<int64_t>(bytes);
}

void QuantizedMatrix::use_int8_dot(const kernels::QuantIsa* leaves) {
    int8_dot = int8_dot_parts(view(), leaves);
}

kernels::QuantMatrix QuantizedMatrix::view() const {
    if (kind == QuantKind::blocks) fail("a matrix of ggml blocks has no QuantMatrix view");
    kernels::QuantMatrix v;
    v.kind = kind;
    v.nbits = nbits;
    v.n_out = n_out;
    v.n_in = n_in;
    v.group = rows_per_table();
    v.codes = codes.data();
    v.lut = lut.empty() ? nullptr : lut.data();
    v.scales = scales.empty() ? nullptr : scales.data();
    return int8_dot ? int8_dot->attach(v) : v;
}

kernels::BlockMatrix QuantizedMatrix::block_view() const {
    return {static_cast<kernels::BlockType>(block_type), n_out, n_in, codes.data(), row_bytes()};
}

uint32_t QuantizedMatrix::code(int64_t o, int64_t i) const {
    uint8_t c = 0;
    unpack_codes(codes.data() + o * row_bytes(), 1, nbits, &c, i);
    return c;
}

void QuantizedMatrix::decode_row(int64_t o, float* out) const {
    if (kind == QuantKind::blocks) {
        const std::byte* row = reinterpret_cast<const std::byte*>(codes.data()) + o * row_bytes();
        dequantize_row(static_cast<GgmlType>(block_type), row, out, n_in);
        return;
    }
    kernels::quant_decode_row(view(), o, 0, n_in, out);
}

QuantizedMatrix blocks_matrix(const TensorView& w) {
    if (w.dtype != DType::blocks || w.shape.size() != 2)
        fail("blocks_matrix: expected a matrix of ggml blocks");
    if (!kernels::block_type_supported(w.block_type))
        fail("{} blocks are not multiplied by the CPU kernels", ggml_type_name(w.block_type));
    QuantizedMatrix q;
    q.kind = QuantKind::blocks;
    q.nbits = 0;
    q.n_out = w.shape[0];
    q.n_in = w.shape[1];
    q.block_type = w.block_type;
    q.block_elems = w.block_elems;
    q.block_bytes = w.block_bytes;
    q.codes.resize(w.n_bytes());
    std::memcpy(q.codes.data(), w.data, w.n_bytes());
    return q;
}

std::vector<uint8_t> coreml_codes(const QuantizedMatrix& q) {
    const int64_t rows = q.whole_group_rows(q.n_out);
    if (q.n_in * q.nbits % 8 == 0) {
        std::vector<uint8_t> out(q.codes.begin(), q.codes.end());
        out.resize(static_cast<size_t>(rows * q.row_bytes()), 0);
        return out;
    }
    std::vector<uint8_t> out(static_cast<size_t>(packed_bytes(rows * q.n_in, q.nbits)), 0);
    std::vector<uint8_t> row(static_cast<size_t>(q.n_in));
    for (int64_t o = 0; o < q.n_out; ++o) {
        unpack_codes(q.codes.data() + o * q.row_bytes(), q.n_in, q.nbits, row.data());
        pack_codes(row.data(), q.n_in, q.nbits, out.data(), o * q.n_in);
    }
    return out;
}

std::array<int64_t, 4> coreml_lut_shape(const QuantizedMatrix& q) {
    if (q.kind != QuantKind::lut) fail("coreml_lut_shape: the matrix is not LUT palettized");
    return {q.n_tables(), 1, int64_t{1} << q.nbits, 1};
}

}  // namespace anelm::quant
