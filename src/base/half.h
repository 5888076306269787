// IEEE binary16 and bfloat16 conversions, round to nearest even. Overflow goes
// to infinity as the hardware does; NaN stays NaN.
#pragma once

#include <bit>
#include <cstdint>

namespace anelm {

constexpr float f16_max = 65504.0f;
constexpr float f16_min_normal = 6.103515625e-05f;  // 2^-14

// Zeroes what would be a subnormal half (keeping the sign), as the Neural
// Engine computes: values already rounded to half, or about to be.
inline void flush_f16_subnormals(float* v, int64_t n) {
    // On the bits, so the compiler vectorizes it: below the smallest normal
    // half in magnitude, only the sign stays (NaN's bits are above it).
    constexpr uint32_t below = std::bit_cast<uint32_t>(f16_min_normal);
    for (int64_t i = 0; i < n; ++i) {
        const uint32_t bits = std::bit_cast<uint32_t>(v[i]);
        v[i] = std::bit_cast<float>((bits & 0x7fffffffu) < below ? bits & 0x80000000u : bits);
    }
}

constexpr float f16_to_f32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
    if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
    if (mant == 0) return std::bit_cast<float>(sign);
    // Subnormal half: normalise into a float.
    int e = -1;
    do {
        ++e;
        mant <<= 1;
    } while ((mant & 0x400u) == 0);
    return std::bit_cast<float>(sign | static_cast<uint32_t>(112 - e) << 23 | ((mant & 0x3ffu) << 13));
}

constexpr uint16_t f32_to_f16(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    const uint32_t abs = x & 0x7fffffffu;
    if (abs > 0x7f800000u) return sign | 0x7e00u | static_cast<uint16_t>((abs >> 13) & 0x3ffu);
    if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to or past 65520: infinity
    if (abs >= 0x38800000u) {                         // normal half
        const uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
        return sign | static_cast<uint16_t>((rounded - 0x38000000u) >> 13);
    }
    if (abs < 0x33000000u) return sign;  // below half the smallest subnormal
    // Subnormal half: shift the implicit-one mantissa, round to nearest even.
    const uint32_t exp = abs >> 23;
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exp;  // 14 .. 24
    const uint32_t half_ulp = 1u << (shift - 1);
    const uint32_t rest = mant & ((1u << shift) - 1);
    uint32_t q = mant >> shift;
    if (rest > half_ulp || (rest == half_ulp && (q & 1u))) ++q;
    return sign | static_cast<uint16_t>(q);
}

constexpr float bf16_to_f32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

constexpr uint16_t f32_to_bf16(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
    return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// The value a float becomes when stored as half and read back.
constexpr float round_to_f16(float f) { return f16_to_f32(f32_to_f16(f)); }

}  // namespace anelm
