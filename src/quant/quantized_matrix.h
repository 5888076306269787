// A quantized weight [n_out, n_in] and its storage, in the form Core ML's
// iOS18 ops take: LUT palettization per grouped output channel
// (constexpr_lut_to_dense: uintN indices of the weight's shape, an f16 lut
// [n_out / G, 1, 2^nbits, 1]; when G does not divide n_out the last group is
// partial here, and Core ML's indices get rows of code 0 to make it whole) or symmetric int8 / int4
// per output channel (constexpr_blockwise_shift_scale: int8 / int4 data, an f16 scale [n_out, 1]).
//
// Or a GGUF's block-quantized weight as stored (kind blocks): each row's ggml
// blocks, multiplied by kernels::block_matmul.
//
// The codes are kept in rows that each start on a byte boundary, LSB first
// inside a row (see kernels::QuantMatrix). That is byte for byte Core ML's
// blob whenever n_in * nbits is a multiple of 8, which holds for every real
// model; coreml_codes() repacks the other shapes contiguously. The tables are
// stored in Core ML's lut order already (table g = rows [g G, (g + 1) G)).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "base/aligned_allocator.h"
#include "base/tensor.h"
#include "kernels/block_kernels.h"
#include "kernels/quant_isa.h"
#include "kernels/quant_kernels.h"
#include "quant/int8_dot_parts.h"

namespace anelm::quant {

using kernels::QuantKind;

struct QuantizedMatrix {
    QuantKind kind = QuantKind::lut;
    int nbits = 4;
    int64_t n_out = 0;
    int64_t n_in = 0;
    int64_t group_size = 0;  // lut: rows per table; 0 = one table for the tensor
    // n_out rows of row_bytes(), 64-byte aligned for whole-line vector loads.
    std::vector<uint8_t, AlignedAllocator<uint8_t>> codes;
    std::vector<uint16_t> lut;     // lut: f16 [n_tables(), 2^nbits]
    std::vector<uint16_t> scales;  // int8 / int4: f16 [n_out]
    // Set by use_int8_dot(): products by integer dot products
    // (kernels::int8_dot_applies), with what they read besides the codes.
    std::optional<Int8DotParts> int8_dot;
    // blocks: the ggml type id and its block geometry.
    uint32_t block_type = 0;
    int64_t block_elems = 0;
    int64_t block_bytes = 0;

    int64_t rows_per_table() const {
        return group_size > 0 ? group_size : std::max<int64_t>(1, n_out);
    }
    int64_t n_tables() const { return (n_out + rows_per_table() - 1) / rows_per_table(); }
    // `rows` rows from the start of a group, padded to whole groups as Core
    // ML's constexpr_lut_to_dense needs (it gives every table as many rows);
    // `rows` itself for one table, int8 and int4.
    int64_t whole_group_rows(int64_t rows) const {
        if (kind != QuantKind::lut || n_tables() == 1) return rows;
        return (rows + rows_per_table() - 1) / rows_per_table() * rows_per_table();
    }
    int64_t row_bytes() const {
        return kind == QuantKind::blocks ? n_in / block_elems * block_bytes
                                         : (n_in * nbits + 7) / 8;
    }
    // Bytes of codes, tables and scales: what a product reads (int8_dot's
    // int8_codes stand in for codes there, so they are not counted again).
    int64_t storage_bytes() const;

    // Multiply by integer dot products from now on, rounding lut tables to
    // int8 and laying the codes out again where `leaves` read them in another
    // layout (null: the scalar reference's, packed).
    void use_int8_dot(const kernels::QuantIsa* leaves = kernels::quant_active());

    kernels::QuantMatrix view() const;  // not for blocks
    kernels::BlockMatrix block_view() const;
    uint32_t code(int64_t o, int64_t i) const;
    // out[i] = the dequantized W[o, i], i < n_in.
    void decode_row(int64_t o, float* out) const;
};

// A copy of a DType::blocks weight's rows (aligned, in private memory, which
// streams faster than the file's pages: runtime/private_weights.h). Throws
// for a block type the kernels do not multiply, naming it.
QuantizedMatrix blocks_matrix(const TensorView& w);

// The codes as Core ML's blob holds them: the elements of whole_group_rows(n_out)
// rows (the padding's codes 0) packed contiguously, LSB first.
std::vector<uint8_t> coreml_codes(const QuantizedMatrix& q);
// The shape of the lut tensor of constexpr_lut_to_dense (iOS18) for this weight
// as a linear layer: [n_tables, 1, 2^nbits, 1].
std::array<int64_t, 4> coreml_lut_shape(const QuantizedMatrix& q);

}  // namespace anelm::quant
