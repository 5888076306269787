// Matrix products computed straight from quantized weights: LUT palettized
// (per grouped channel, Core ML's iOS18 constexpr_lut_to_dense) and symmetric
// int8 / int4 per output channel. Weights are decoded a few rows at a time in
// registers or small per-thread buffers, never into a dense copy.
#pragma once

#include <cstdint>
#include <span>

#include "base/thread_pool.h"

namespace anelm::kernels {

// blocks: a GGUF's ggml blocks, multiplied by block_kernels.h, never by the
// functions below.
enum class QuantKind : uint8_t { lut, int8, int4, blocks };

// How integer leaves read a matrix's codes (QuantIsa::int8_six_bit_layout):
// packed is QuantMatrix's layout below; planes (6-bit codes only,
// int8_layout.cpp) puts each block's low nibbles and high bits apart, for
// hosts without a 64-entry byte look-up.
enum class Int8Layout : uint8_t { packed, planes };

// A quantized weight [n_out, n_in] as the kernels read it (storage owned elsewhere).
//
// codes: row o starts at codes + o * row_bytes, row_bytes = ceil(n_in * nbits / 8).
// Within a row element i occupies bits [i * nbits, (i + 1) * nbits) counting from
// bit 0 of the row's first byte (LSB first, elements may straddle bytes): Core ML's
// packing of uint1/2/3/4/6 and int4 blobs. Rows start on a byte boundary, so when
// n_in * nbits is a multiple of 8 (every real model) the whole buffer is exactly
// Core ML's blob; otherwise quant::coreml_indices repacks it contiguously.
// lut:  nbits in {1, 2, 3, 4, 6, 8}; element (o, i) = table[o / group][code], the
//       tables f16 [ceil(n_out / group), 2^nbits] (Core ML lut [n_out / G, 1, 2^nbits, 1]).
// int8: nbits 8, codes are two's complement bytes; element (o, i) = scales[o] * code.
// int4: nbits 4, two's complement nibbles; element (o, i) = scales[o] * code.
struct QuantMatrix {
    QuantKind kind = QuantKind::lut;
    int nbits = 4;
    int64_t n_out = 0;
    int64_t n_in = 0;
    int64_t group = 1;                 // lut: rows sharing one table (n_out for one table)
    const uint8_t* codes = nullptr;    // packed codes, row_bytes() per row
    const uint16_t* lut = nullptr;     // lut: f16 tables
    const uint16_t* scales = nullptr;  // int8/int4: f16 [n_out]
    // Integer dot products (see int8_dot_applies), with the tables rounded to
    // int8 for lut: entry e of table g is dot_lut[g << nbits | e] * dot_scale[g].
    bool int8_dot = false;
    const int8_t* dot_lut = nullptr;
    const float* dot_scale = nullptr;
    // The codes again in int8_layout where that is not packed (row_bytes() per
    // row, as codes), for the integer leaves only.
    Int8Layout int8_layout = Int8Layout::packed;
    const uint8_t* int8_codes = nullptr;

    int64_t row_bytes() const { return (n_in * nbits + 7) / 8; }
};

// Inputs per block of x that share one int8 scale in integer dot products.
constexpr int64_t int8_block = 128;
// Products of up to this many tokens stream the codes once per token group;
// longer ones multiply blocks of decoded rows.
constexpr int64_t quant_gemv_max_tokens = 16;

// Whether w is multiplied by integer dot products: asked for (int8_dot),
// codes of int8, int4 or 4- or 6-bit lut with int8 tables, and whole blocks
// of inputs. Then each block b of int8_block inputs of a token is rounded to
// int8 (q, d_b by round_to_int8) and y[o] = s_o * sum_b d_b * sum_{i in b}
// c_o(i) q_i, each block's sum exact in integers: c the int8 table entry (s_o
// its table's dot_scale) or the integer code (s_o the row's scale). The error
// is that of 8-bit activations, as in llama.cpp's quantized products, plus
// rounding the tables (int8_table_limit). The scalar reference defines it for any
// number of tokens; leaves without integer products for a token count (see
// QuantIsa) take the exact path for it.
bool int8_dot_applies(const QuantMatrix& w);

// w's codes in `layout` (n_out rows of row_bytes()) into out, for a matrix
// int8_dot_applies to; only planes, of 6-bit codes, is written (packed is
// the codes themselves).
void write_int8_layout(const QuantMatrix& w, Int8Layout layout, uint8_t* out);

// The largest |entry| of an nbits table rounded to int8: 63 for 4-bit
// tables, so that AVX2 can multiply them offset by 64 (unsigned, below 128)
// against the signed inputs with no sign instruction and no saturation of
// vpmaddubsw's pair sums (2 * 127 * 127 < 2^15); else 127. Against the
// 4-bit palette's own error the 7-bit tables add little (docs/quantization.md).
constexpr int int8_table_limit(int nbits) {
    return nbits <= 4 ? 63 : 127;
}

// The int8 tables of f16 lut tables [n_tables, 2^nbits]: entries
// round(t / s) with s = max |t| / int8_table_limit(nbits) per table (ties to
// even), s in scales.
void round_tables_to_int8(const uint16_t* lut, int64_t n_tables, int nbits, int8_t* entries,
                          float* scales);

// q[i] = round(v[i] * limit / max |v|), ties to even as the SIMD conversions
// round; returns the scale max |v| / limit (NaN, with q all 0, if v holds
// infinities or NaN, so that they reach the product).
float round_to_int8(const float* v, int64_t n, int8_t* q, int limit = 127);

// Throws unless w is a combination the kernels support (kinds, widths, pointers, group).
void check_quant_matrix(const QuantMatrix& w);

// y[t, o] = sum_i x[t, i] * W[o, i] for t < n_tokens, W the dequantized weight.
// x: f32 [n_tokens, n_in]; y: f32 [n_tokens, n_out]. Split across the pool.
// int8/int4 rows are summed on the integer codes and scaled once at the end.
void quant_matmul(const QuantMatrix& w, const float* x, int64_t n_tokens, float* y,
                  ThreadPool& pool);

// The most matrices quant_matmul_stacked multiplies in one pool run (an LM
// head split in 16 parts).
constexpr size_t quant_max_stacked = 16;

// ys[k] = quant_matmul(ws[k], x) for matrices of one input (a layer's query,
// key and value; its gate and up): where their integer products round x
// alike, x is rounded once and, for few tokens, all go in one pool run.
void quant_matmul_stacked(std::span<const QuantMatrix> ws, const float* x, int64_t n_tokens,
                          std::span<float* const> ys, ThreadPool& pool);

// out[j] = W[o, k0 + j] for j < n: part of one dequantized row.
void quant_decode_row(const QuantMatrix& w, int64_t o, int64_t k0, int64_t n, float* out);

namespace ref {
// Integer dot products where int8_dot_applies(w), as kernels::quant_matmul.
void quant_matmul(const QuantMatrix& w, const float* x, int64_t n_tokens, float* y,
                  ThreadPool& pool);
void quant_decode_row(const QuantMatrix& w, int64_t o, int64_t k0, int64_t n, float* out);
}  // namespace ref

}  // namespace anelm::kernels
