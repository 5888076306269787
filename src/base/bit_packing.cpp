#include "base/bit_packing.h"

namespace anelm {

void pack_codes(const uint8_t* codes, int64_t n, int nbits, uint8_t* out, int64_t first) {
    if (nbits == 8) {
        for (int64_t j = 0; j < n; ++j) out[first + j] = codes[j];
        return;
    }
    for (int64_t j = 0; j < n; ++j) {
        const int64_t bit = (first + j) * nbits;
        const uint32_t v = static_cast<uint32_t>(codes[j]) << (bit % 8);
        out[bit / 8] |= static_cast<uint8_t>(v);
        if (bit % 8 + nbits > 8) out[bit / 8 + 1] |= static_cast<uint8_t>(v >> 8);
    }
}

void unpack_codes(const uint8_t* packed, int64_t n, int nbits, uint8_t* codes, int64_t first) {
    const uint32_t mask = (1u << nbits) - 1;
    for (int64_t j = 0; j < n; ++j) {
        const int64_t bit = (first + j) * nbits;
        uint32_t v = packed[bit / 8];
        if (bit % 8 + nbits > 8) v |= static_cast<uint32_t>(packed[bit / 8 + 1]) << 8;
        codes[j] = static_cast<uint8_t>((v >> (bit % 8)) & mask);
    }
}

}  // namespace anelm
