// Codes rearranged for integer leaves that cannot look up 64 entries at once.
//
// planes, per block of int8_block = 128 six-bit codes (96 bytes, as packed):
//   bytes  0-31: byte j holds the low 4 bits of code j (bits 0-3) and of code
//                32 + j (bits 4-7);
//   bytes 32-63: the same for codes 64 + j and 96 + j;
//   bytes 64-95: byte j holds bits 4 and 5 of code 32 k + j at bits 7 - 2k
//                and 6 - 2k, k = 0..3.
// A leaf then gets 32 codes' low nibbles with a mask (or a shift and a mask),
// and each high bit in the sign bit of its byte, where vpblendvb reads it,
// by adding the high-bit bytes to themselves 2k or 2k + 1 times.
#include "base/error.h"
#include "kernels/quant_kernels.h"
#include "kernels/vec_quant.h"

namespace anelm::kernels {

namespace {

void write_planes(const uint8_t* row, int64_t row_bytes, int64_t n_blocks, uint8_t* out) {
    constexpr int64_t block_bytes = int8_block * 6 / 8;
    for (int64_t b = 0; b < n_blocks; ++b) {
        uint8_t* block = out + b * block_bytes;
        for (int64_t j = 0; j < 32; ++j) {
            uint32_t code[4];
            for (int64_t k = 0; k < 4; ++k)
                code[k] = packed_code_at(row, row_bytes, b * int8_block + 32 * k + j, 6);
            block[j] = static_cast<uint8_t>((code[0] & 15) | (code[1] & 15) << 4);
            block[32 + j] = static_cast<uint8_t>((code[2] & 15) | (code[3] & 15) << 4);
            uint32_t high = 0;
            for (int64_t k = 0; k < 4; ++k) high |= (code[k] >> 4 & 1) << (7 - 2 * k);
            for (int64_t k = 0; k < 4; ++k) high |= (code[k] >> 5 & 1) << (6 - 2 * k);
            block[64 + j] = static_cast<uint8_t>(high);
        }
    }
}

}  // namespace

void write_int8_layout(const QuantMatrix& w, Int8Layout layout, uint8_t* out) {
    if (!int8_dot_applies(w)) fail("write_int8_layout: the matrix has no integer products");
    if (layout != Int8Layout::planes) fail("write_int8_layout: packed codes are the matrix's own");
    if (w.nbits != 6) fail("write_int8_layout: planes hold 6-bit codes, not {}-bit", w.nbits);
    const int64_t row_bytes = w.row_bytes();
    for (int64_t o = 0; o < w.n_out; ++o) {
        write_planes(w.codes + o * row_bytes, row_bytes, w.n_in / int8_block, out + o * row_bytes);
    }
}

}  // namespace anelm::kernels
