// The block decoders the AVX-512 block leaves share (block_avx512.cpp,
// block_gemm_avx512.cpp): each type's weights as vectors of bytes, with
// their scales. Included only by files compiled for AVX-512 with VNNI, after
// their target pragmas; internal linkage throughout (an unnamed namespace),
// so each file keeps its own copy.
#pragma once

#include <immintrin.h>

#include <cstring>

#include "kernels/block_isa.h"

namespace anelm::kernels {

// The GEMM leaf for a type and token count (block_gemm_avx512.cpp), as
// BlockIsa::gemm.
BlockGemv avx512_block_gemm(BlockType type, int64_t n_tokens);

namespace {

inline uint16_t u16_at(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

inline float half_at(const uint8_t* p) {
    return _cvtsh_ss(u16_at(p));
}

inline __m256i load256(const void* p) {
    return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

inline __m128i load128(const void* p) {
    return _mm_loadu_si128(static_cast<const __m128i*>(p));
}

// a in lanes 0-7, b in lanes 8-15: the scales of two blocks over their dwords.
inline __m512 pair_ps(float a, float b) {
    return _mm512_insertf32x8(_mm512_set1_ps(a), _mm256_set1_ps(b), 1);
}

// ---- Blocks of 32 inputs ----

// A 16-byte run of nibbles as 32 bytes: input j in the low nibble of byte j,
// input j + 16 in its high nibble.
inline __m256i nibbles32(const uint8_t* p) {
    const __m128i v = load128(p);
    return _mm256_and_si256(
        _mm256_inserti128_si256(_mm256_castsi128_si256(v), _mm_srli_epi16(v, 4), 1),
        _mm256_set1_epi8(0x0f));
}

// Each 32-input type: its block bytes; whether it has nibble codes at byte
// qs (Q8_0 has int8 weights there) and fifth bits in the u32 at byte qh (-1:
// none); whether its weights are signed (else unsigned codes, with a min m at
// byte 2 that meets q8_1's s); weights(codes, high) the 64 weights of two
// blocks from their codes in input order and fifth bits (bit j: input j).
struct Q4_0 {
    static constexpr int64_t bytes = 18, qs = 2, qh = -1;
    static constexpr bool nibbles = true, is_signed = true, has_min = false;
    static __m512i weights(__m512i codes, __mmask64) {
        return _mm512_sub_epi8(codes, _mm512_set1_epi8(8));
    }
};

struct Q4_1 {
    static constexpr int64_t bytes = 20, qs = 4, qh = -1;
    static constexpr bool nibbles = true, is_signed = false, has_min = true;
    static __m512i weights(__m512i codes, __mmask64) { return codes; }
};

// Where the fifth bit is clear, Q5_0's weight is the nibble - 16 and Q5_1's
// code is the nibble.
struct Q5_0 {
    static constexpr int64_t bytes = 22, qs = 6, qh = 2;
    static constexpr bool nibbles = true, is_signed = true, has_min = false;
    static __m512i weights(__m512i codes, __mmask64 high) {
        return _mm512_mask_sub_epi8(codes, _knot_mask64(high), codes, _mm512_set1_epi8(16));
    }
};

struct Q5_1 {
    static constexpr int64_t bytes = 24, qs = 8, qh = 4;
    static constexpr bool nibbles = true, is_signed = false, has_min = true;
    static __m512i weights(__m512i codes, __mmask64 high) {
        return _mm512_mask_add_epi8(codes, high, codes, _mm512_set1_epi8(16));
    }
};

struct Q8_0 {
    static constexpr int64_t bytes = 34, qs = 2, qh = -1;
    static constexpr bool nibbles = false, is_signed = true, has_min = false;
    static __m512i weights(__m512i codes, __mmask64) { return codes; }
};

struct IQ4_NL {
    static constexpr int64_t bytes = 18, qs = 2, qh = -1;
    static constexpr bool nibbles = true, is_signed = true, has_min = false;
    static __m512i weights(__m512i codes, __mmask64) {
        const __m512i table = _mm512_broadcast_i32x4(_mm_setr_epi8(
            -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113));
        return _mm512_shuffle_epi8(table, codes);
    }
};

// Two blocks' weights (inputs in order, the second block's zero where there
// is none), their scales d over the dwords of each (lanes 0-7, 8-15) and
// their mins m in lanes 0 and 8.
struct PairWeights {
    __m512i w;
    __m512 d, m;
};

// vpermw patterns for two blocks read by one 64-byte load: codes gives words
// 0-7 and again 8-15 the first block's nibbles, 16-31 the second's; scales
// gives d of the first block in words 0-7, of the second in 8-15, and m
// likewise in 16-31 (every offset is even).
template <class B>
struct PairWords {
    alignas(64) uint16_t codes[32]{};
    alignas(64) uint16_t scales[32]{};
    constexpr PairWords() {
        for (int i = 0; i < 32; ++i) {
            codes[i] = static_cast<uint16_t>(i / 16 * (B::bytes / 2) + B::qs / 2 + i % 8);
            scales[i] = static_cast<uint16_t>(i % 16 / 8 * (B::bytes / 2) + i / 16);
        }
    }
};
template <class B>
constexpr PairWords<B> pair_words{};

// Two nibble blocks at p from one load of the 64 bytes there: all inside the row.
template <class B>
inline PairWeights pair_loaded(const uint8_t* p) {
    const __m512i v = _mm512_loadu_si512(p);
    __m512i codes = _mm512_permutexvar_epi16(_mm512_load_si512(pair_words<B>.codes), v);
    codes = _mm512_and_si512(_mm512_mask_srli_epi16(codes, 0xff00ff00, codes, 4),
                             _mm512_set1_epi8(0x0f));
    __mmask64 high = 0;
    if constexpr (B::qh >= 0)
        high = block_u32(p + B::qh) | uint64_t{block_u32(p + B::bytes + B::qh)} << 32;
    const __m512i scales = _mm512_permutexvar_epi16(_mm512_load_si512(pair_words<B>.scales), v);
    PairWeights pw{B::weights(codes, high), _mm512_cvtph_ps(_mm512_castsi512_si256(scales)),
                   _mm512_setzero_ps()};
    if constexpr (B::has_min) {
        pw.m = _mm512_maskz_mov_ps(0x0101, _mm512_cvtph_ps(_mm512_extracti64x4_epi64(scales, 1)));
    }
    return pw;
}

// Blocks b and b + 1 (Two) or b alone, reading no byte past them.
template <class B, bool Two>
inline PairWeights pair_at_end(const uint8_t* p) {
    const uint8_t* p1 = p + B::bytes;
    __m256i first, second = _mm256_setzero_si256();
    if constexpr (B::nibbles) {
        first = nibbles32(p + B::qs);
        if constexpr (Two) second = nibbles32(p1 + B::qs);
    } else {
        first = load256(p + B::qs);
        if constexpr (Two) second = load256(p1 + B::qs);
    }
    __mmask64 high = 0;
    if constexpr (B::qh >= 0)
        high = block_u32(p + B::qh) | (Two ? uint64_t{block_u32(p1 + B::qh)} << 32 : 0);
    const __m512i codes = _mm512_inserti64x4(_mm512_castsi256_si512(first), second, 1);
    PairWeights pw{B::weights(codes, high), pair_ps(half_at(p), Two ? half_at(p1) : 0.0f),
                   _mm512_setzero_ps()};
    if constexpr (B::has_min) {
        pw.m = _mm512_maskz_mov_ps(0x0101, pair_ps(half_at(p + 2), Two ? half_at(p1 + 2) : 0.0f));
    }
    return pw;
}

// a[0] over lanes 0-7 and a[1] (Two) or 0 over lanes 8-15.
template <bool Two>
inline __m512 pair_from(const float* a) {
    const __m512 first = _mm512_set1_ps(a[0]);
    return Two ? _mm512_mask_broadcastss_ps(first, 0xff00, _mm_load_ss(a + 1))
               : _mm512_maskz_mov_ps(0x00ff, first);
}

// ---- K blocks of 256 inputs ----

// One K block as the products read it: codes[k] the unsigned codes of inputs
// 64k..64k+63, scales[k] the int16 scale of each pair of them; per 16 inputs
// the int16 factor of q8_K's sum that joins the integer sum (offset: minus
// the code offset times the scale) and the one that gives the mins' sum.
struct KBlock {
    __m512i codes[4];
    __m512i scales[4];
    __m256i offset;
    __m256i mins;
    float d, dmin;
};

// scales[k] from 16 int16 scales of 16 inputs each: word i of vector k
// covers inputs 64k + 2i, +1, in group 4k + i / 8.
inline void scales_of_16(__m256i s16, __m512i scales[4]) {
    alignas(64) static constexpr int16_t group_of_word[32] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1,
                                                              1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2,
                                                              2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
    const __m512i groups = _mm512_load_si512(group_of_word);
    for (int k = 0; k < 4; ++k) {
        const __m512i pick =
            _mm512_add_epi16(groups, _mm512_set1_epi16(static_cast<int16_t>(4 * k)));
        scales[k] = _mm512_permutexvar_epi16(pick, _mm512_castsi256_si512(s16));
    }
}

// 2-bit codes of Q2_K and Q3_K: input 32s + l of half h is bits 2s of byte
// 32h + l; vector k holds s = 2(k % 2) in its low half and s + 1 in its high.
inline __m512i two_bit_codes(const uint8_t* qs, int k) {
    const __m512i q = _mm512_broadcast_i64x4(load256(qs + 32 * (k / 2)));
    const int s = 2 * (k % 2);
    const __m512i shift = _mm512_inserti64x4(_mm512_set1_epi16(static_cast<int16_t>(2 * s)),
                                             _mm256_set1_epi16(static_cast<int16_t>(2 * s + 2)), 1);
    return _mm512_and_si512(_mm512_srlv_epi16(q, shift), _mm512_set1_epi8(3));
}

// The bytes where bit `bit` (low half) or `bit` + 1 (high half) is set in the
// 32 bytes at p, repeated in both halves.
inline __mmask64 bits_set(const uint8_t* p, int bit) {
    const __m512i v = _mm512_broadcast_i64x4(load256(p));
    const __m512i pattern =
        _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << bit)),
                           _mm256_set1_epi8(static_cast<char>(1 << (bit + 1))), 1);
    return _mm512_test_epi8_mask(v, pattern);
}

// Q4_K (Bits 4) and Q5_K (Bits 5): inputs 64j..64j+63 in 32 bytes of nibbles
// (low: the first 32), Q5_K's fifth bit of input 32s + l bit s of qh byte l.
template <int Bits>
struct QK4 {
    static constexpr int64_t bytes = Bits == 5 ? 176 : 144;
    static constexpr bool has_offset = false, has_min = true;
    static constexpr int group = 32, code_offset = 0;
    // The integer scale of each group and the min of each 16 inputs (gemm).
    static void groups(const uint8_t* p, int32_t* scales, int16_t* mins) {
        uint64_t s, m;
        k4_scales_mins(p + 4, s, m);
        for (int j = 0; j < 8; ++j) scales[j] = static_cast<int32_t>(s >> 8 * j & 0xff);
        for (int g = 0; g < 16; ++g) mins[g] = static_cast<int16_t>(m >> 8 * (g / 2) & 0xff);
    }
    static void decode(const uint8_t* p, KBlock& k) {
        k.d = half_at(p);
        k.dmin = half_at(p + 2);
        uint64_t scales, mins;
        k4_scales_mins(p + 4, scales, mins);
        // Scale j covers 32 inputs: words 16j..16j+15 of the pairs.
        const __m512i s16 = _mm512_castsi128_si512(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(scales)));
        for (int j = 0; j < 4; ++j) {
            const __m512i pick =
                _mm512_inserti64x4(_mm512_set1_epi16(static_cast<int16_t>(2 * j)),
                                   _mm256_set1_epi16(static_cast<int16_t>(2 * j + 1)), 1);
            k.scales[j] = _mm512_permutexvar_epi16(pick, s16);
        }
        const __m128i m8 = _mm_cvtsi64_si128(mins);
        k.mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
        const uint8_t* qs = p + (Bits == 5 ? 48 : 16);
        const __m512i low4 = _mm512_set1_epi8(0x0f);
        for (int h = 0; h < 2; ++h) {
            const __m512i v = _mm512_loadu_si512(qs + 64 * h);
            const __m512i lo = _mm512_and_si512(v, low4);
            const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
            // lo holds inputs 128h + 0..31 and 128h + 64..95, hi the runs after each.
            k.codes[2 * h] = _mm512_shuffle_i64x2(lo, hi, 0x44);
            k.codes[2 * h + 1] = _mm512_shuffle_i64x2(lo, hi, 0xee);
        }
        if constexpr (Bits == 5) {
            for (int j = 0; j < 4; ++j) {
                k.codes[j] = _mm512_mask_add_epi8(k.codes[j], bits_set(p + 16, 2 * j), k.codes[j],
                                                  _mm512_set1_epi8(16));
            }
        }
    }
};

// Q6_K: input 32s + l of half h has its low 4 bits in nibble s / 2 of ql byte
// 64h + 32(s % 2) + l, its top 2 in bits 2s of qh byte 32h + l; code - 32
// times an int8 scale per 16 inputs.
struct Q6_K {
    static constexpr int64_t bytes = 210;
    static constexpr bool has_offset = true, has_min = false;
    static constexpr int group = 16, code_offset = 32;
    static void groups(const uint8_t* p, int32_t* scales, int16_t*) {
        for (int g = 0; g < 16; ++g) scales[g] = static_cast<int8_t>(p[192 + g]);
    }
    static void decode(const uint8_t* p, KBlock& k) {
        k.d = half_at(p + 208);
        const __m256i s16 = _mm256_cvtepi8_epi16(load128(p + 192));
        scales_of_16(s16, k.scales);
        k.offset = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(s16, 5));
        const __m512i low4 = _mm512_set1_epi8(0x0f), top2 = _mm512_set1_epi8(0x30);
        for (int h = 0; h < 2; ++h) {
            const __m512i v = _mm512_loadu_si512(p + 64 * h);
            const __m512i qh = _mm512_broadcast_i64x4(load256(p + 128 + 32 * h));
            // Bits 2s of qh to bits 4-5: s = 0, 1 shift left by 4, 2; s = 2, 3 right by 0, 2.
            const __m512i high01 = _mm512_sllv_epi16(
                qh, _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1));
            const __m512i high23 = _mm512_srlv_epi16(
                qh, _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1));
            // lo | (high & 0x30)
            k.codes[2 * h] =
                _mm512_ternarylogic_epi32(_mm512_and_si512(v, low4), high01, top2, 0xf8);
            k.codes[2 * h + 1] = _mm512_ternarylogic_epi32(
                _mm512_and_si512(_mm512_srli_epi16(v, 4), low4), high23, top2, 0xf8);
        }
    }
};

// Q3_K: 2-bit codes plus 4 where bit 4h + s of hmask byte l is set (the
// weight is the code - 4); sixteen signed scales (q3_k_scales).
struct Q3_K {
    static constexpr int64_t bytes = 110;
    static constexpr bool has_offset = true, has_min = false;
    static constexpr int group = 16, code_offset = 4;
    static void groups(const uint8_t* p, int32_t* scales, int16_t*) {
        const Q3KScales sc = q3_k_scales(p + 96);
        for (int g = 0; g < 16; ++g)
            scales[g] = static_cast<int8_t>(sc.words[g / 4] >> 8 * (g % 4) & 0xff);
    }
    static void decode(const uint8_t* p, KBlock& k) {
        k.d = half_at(p + 108);
        const Q3KScales sc = q3_k_scales(p + 96);
        const __m256i s16 = _mm256_cvtepi8_epi16(
            _mm_setr_epi32(static_cast<int>(sc.words[0]), static_cast<int>(sc.words[1]),
                           static_cast<int>(sc.words[2]), static_cast<int>(sc.words[3])));
        scales_of_16(s16, k.scales);
        k.offset = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(s16, 2));
        for (int j = 0; j < 4; ++j) {
            const __m512i low2 = two_bit_codes(p + 32, j);
            k.codes[j] = _mm512_mask_add_epi8(low2, bits_set(p, 4 * (j / 2) + 2 * (j % 2)), low2,
                                              _mm512_set1_epi8(4));
        }
    }
};

// Q2_K: 2-bit codes; scale byte g holds the scale (low nibble) and min of
// inputs 16g..16g+15.
struct Q2_K {
    static constexpr int64_t bytes = 84;
    static constexpr bool has_offset = false, has_min = true;
    static constexpr int group = 16, code_offset = 0;
    static void groups(const uint8_t* p, int32_t* scales, int16_t* mins) {
        for (int g = 0; g < 16; ++g) {
            scales[g] = p[g] & 0xf;
            mins[g] = static_cast<int16_t>(p[g] >> 4);
        }
    }
    static void decode(const uint8_t* p, KBlock& k) {
        k.d = half_at(p + 80);
        k.dmin = half_at(p + 82);
        const __m128i sm = load128(p);
        scales_of_16(_mm256_cvtepu8_epi16(_mm_and_si128(sm, _mm_set1_epi8(0x0f))), k.scales);
        k.mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), _mm_set1_epi8(0x0f)));
        for (int j = 0; j < 4; ++j) k.codes[j] = two_bit_codes(p + 16, j);
    }
};

}  // namespace

}  // namespace anelm::kernels
