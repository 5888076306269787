// Sub-byte code packing in Core ML's order (MILBlob uint1/2/3/4/6, int4):
// element i occupies bits [i * nbits, (i + 1) * nbits) of the byte stream,
// counting from bit 0 (the LSB) of byte 0; 3- and 6-bit elements may straddle
// two bytes. The unused high bits of the last byte are zero.
#pragma once

#include <cstdint>

namespace anelm {

// Bytes that hold n codes of nbits (1..8).
constexpr int64_t packed_bytes(int64_t n, int nbits) {
    return (n * nbits + 7) / 8;
}

// Writes codes[0..n) (each < 2^nbits) as elements first..first+n of the packed
// stream at out, OR-ing into bytes that must start zero.
void pack_codes(const uint8_t* codes, int64_t n, int nbits, uint8_t* out, int64_t first = 0);

// codes[j] = element first + j of the packed stream, j < n.
void unpack_codes(const uint8_t* packed, int64_t n, int nbits, uint8_t* codes, int64_t first = 0);

}  // namespace anelm
