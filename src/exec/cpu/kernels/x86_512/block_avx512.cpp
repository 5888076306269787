// AVX-512 VNNI leaves for ggml block-quantized weights (block_isa.h). Every
// block's integer sum is exact in int32 lanes and scaled as the reference
// scales it; only the order of the float additions differs.
//
// 32-input blocks go two to a 512-bit vector. vpdpbusd multiplies unsigned by
// signed bytes: unsigned codes (Q4_1, Q5_1) meet the inputs as they are,
// signed weights (Q4_0, Q5_0, Q8_0, IQ4_NL) as their magnitudes against the
// inputs carrying the weights' signs.
//
// 256-input K blocks go as four vectors of 64 codes, which are unsigned (0..63
// at most): vpmaddubsw sums pairs of code times input into 16 bits without
// saturating (2 * 63 * 127 < 2^15), vpdpwssd multiplies the pairs by their
// sub-block's scale into int32. A code's offset (Q6_K's 32, Q3_K's 4) and the
// mins of Q2_K, Q4_K and Q5_K meet q8_K's sums of 16 inputs instead of the
// inputs, as llama.cpp's SIMD leaves do.

// The VNNI instructions are this file's alone among the AVX-512 leaves it is
// compiled with (cmake/anelm_modules.cmake); block_active() checks for them.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512vnni"))), apply_to = function)
#else
#pragma GCC target("avx512vnni")
#endif
// GCC 12 flags its own _mm512_undefined_* inside AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/aligned_allocator.h"
#include "exec/cpu/kernels/block_isa.h"

namespace anelm::kernels {

namespace {

constexpr int pass_tokens = 4;

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

// Blocks b and b + 1 (Two) or b alone of the T tokens of x added into acc[t].
template <class B, int T, bool Two>
inline void pair_dot(const PairWeights& pw, const BlockActs& x, int64_t b, __m512 acc[T]) {
    const int64_t n_blocks = x.n_in / 32;
    // vpdpbusd's unsigned operand: the magnitudes, the signs moved to x.
    const __m512i uw = B::is_signed ? _mm512_abs_epi8(pw.w) : pw.w;
    const __mmask64 negative = B::is_signed ? _mm512_movepi8_mask(pw.w) : 0;
    for (int t = 0; t < T; ++t) {
        const int8_t* q = x.q + t * x.n_in + b * 32;
        __m512i xv = Two ? _mm512_loadu_si512(q) : _mm512_zextsi256_si512(load256(q));
        if constexpr (B::is_signed) {
            xv = _mm512_mask_sub_epi8(xv, negative, _mm512_setzero_si512(), xv);
        }
        const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), uw, xv);
        const int64_t k = t * n_blocks + b;
        const __m512 scale = _mm512_mul_ps(pw.d, pair_from<Two>(x.d + k));
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc[t]);
        if constexpr (B::has_min) acc[t] = _mm512_fmadd_ps(pw.m, pair_from<Two>(x.s + k), acc[t]);
    }
}

template <class B>
struct Blocks32 {
    template <int T>
    static void row_dot(const uint8_t* row, const BlockActs& x, float* sums) {
        __m512 acc[T];
        for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
        const int64_t n_blocks = x.n_in / 32;
        int64_t b = 0;
        if constexpr (B::nibbles) {
            // One load per pair while its 64 bytes stay inside the row.
            for (; (n_blocks - b) * B::bytes >= 64; b += 2)
                pair_dot<B, T, true>(pair_loaded<B>(row + b * B::bytes), x, b, acc);
        }
        for (; b + 2 <= n_blocks; b += 2)
            pair_dot<B, T, true>(pair_at_end<B, true>(row + b * B::bytes), x, b, acc);
        if (b < n_blocks)
            pair_dot<B, T, false>(pair_at_end<B, false>(row + b * B::bytes), x, b, acc);
        for (int t = 0; t < T; ++t) sums[t] = _mm512_reduce_add_ps(acc[t]);
    }
};

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

template <class B>
struct BlocksK {
    template <int T>
    static void row_dot(const uint8_t* row, const BlockActs& x, float* sums) {
        __m512 acc[T];
        __m256 min_acc[T];
        for (int t = 0; t < T; ++t) {
            acc[t] = _mm512_setzero_ps();
            min_acc[t] = _mm256_setzero_ps();
        }
        const int64_t n_blocks = x.n_in / 256, n_sums = x.n_in / act_sum_len;
        for (int64_t b = 0; b < n_blocks; ++b) {
            KBlock k;
            B::decode(row + b * B::bytes, k);
            for (int t = 0; t < T; ++t) {
                const int8_t* q = x.q + t * x.n_in + b * 256;
                __m512i isum = _mm512_setzero_si512();
                for (int j = 0; j < 4; ++j) {
                    const __m512i pairs =
                        _mm512_maddubs_epi16(k.codes[j], _mm512_loadu_si512(q + 64 * j));
                    isum = _mm512_dpwssd_epi32(isum, pairs, k.scales[j]);
                }
                const __m256i bsums = load256(x.bsums + t * n_sums + b * 16);
                if constexpr (B::has_offset) {
                    isum = _mm512_add_epi32(
                        isum, _mm512_zextsi256_si512(_mm256_madd_epi16(bsums, k.offset)));
                }
                const float dx = x.d[t * n_blocks + b];
                acc[t] =
                    _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(k.d * dx), acc[t]);
                if constexpr (B::has_min) {
                    min_acc[t] =
                        _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(bsums, k.mins)),
                                        _mm256_set1_ps(k.dmin * dx), min_acc[t]);
                }
            }
        }
        for (int t = 0; t < T; ++t) {
            const __m256 m = min_acc[t];
            const __m128 m4 = _mm_add_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
            const __m128 m2 = _mm_add_ps(m4, _mm_movehl_ps(m4, m4));
            const float min_sum = _mm_cvtss_f32(_mm_add_ss(m2, _mm_movehdup_ps(m2)));
            sums[t] = _mm512_reduce_add_ps(acc[t]) - min_sum;
        }
    }
};

// ---- Many tokens (BlockIsa::gemm) ----
//
// A tile of 16 rows is unpacked once into int8 weights, four inputs of the 16
// rows per 64-byte vector (dword lane r: row r), so that one vpdpbusd takes
// four inputs of a token, broadcast to every lane as unsigned bytes (x.qu,
// q + 128), against four inputs of each row. The 128s add 128 times the
// weights' sum, so each integer group's sum starts that far below zero. K
// types multiply each group's exact sum by its integer scale and scale the
// block's sum once, mins through q8_K's sums (vpdpwssd); 32-input types
// scale each block's sum. Tokens go gemm_tokens at a time through the tile.
constexpr int tile_rows = 16;
constexpr int gemm_tokens = 8;

// One row unpacked: its weights as int8 (signed, or the codes of types with
// mins), per integer group its scale (K types), per block d and dmin (or
// Q4_1/Q5_1's m), per 16 inputs the min (K types with mins).
struct RowUnpacked {
    int8_t* w;
    int32_t* scales;
    float* d;
    float* dmin;
    int16_t* mins;
};

// A tile: per row (lane) of each vector. w: n_in / 4 vectors of four inputs;
// start: per group -128 times its weights' sum; scales, d, dmin as above;
// mins: per block and pair of 16-input groups, both mins as int16.
struct Tile {
    int8_t* w;
    int32_t* start;
    int32_t* scales;
    float* d;
    float* dmin;
    int32_t* mins;
};

// The gemm traits of a 32-input type B.
template <class B>
struct Gemm32 {
    static constexpr int64_t group = 32, block = 32;
    static constexpr bool k = false, k_mins = false, q8_1_mins = B::has_min;
    static void unpack_row(const uint8_t* row, int64_t n_in, const RowUnpacked& u) {
        const int64_t n_blocks = n_in / 32;
        int64_t b = 0;
        if constexpr (B::nibbles) {
            for (; (n_blocks - b) * B::bytes >= 64; b += 2)
                _mm512_storeu_si512(u.w + 32 * b, pair_loaded<B>(row + b * B::bytes).w);
        }
        for (; b + 2 <= n_blocks; b += 2)
            _mm512_storeu_si512(u.w + 32 * b, pair_at_end<B, true>(row + b * B::bytes).w);
        if (b < n_blocks) {
            _mm256_storeu_si256(
                reinterpret_cast<__m256i*>(u.w + 32 * b),
                _mm512_castsi512_si256(pair_at_end<B, false>(row + b * B::bytes).w));
        }
        for (b = 0; b < n_blocks; ++b) {
            u.d[b] = half_at(row + b * B::bytes);
            u.dmin[b] = B::has_min ? half_at(row + b * B::bytes + 2) : 0.0f;
        }
    }
};

// The gemm traits of a K type B: the codes less B's offset as weights.
template <class B>
struct GemmK {
    static constexpr int64_t group = B::group, block = 256;
    static constexpr bool k = true, k_mins = B::has_min, q8_1_mins = false;
    static void unpack_row(const uint8_t* row, int64_t n_in, const RowUnpacked& u) {
        for (int64_t b = 0; b < n_in / 256; ++b) {
            const uint8_t* p = row + b * B::bytes;
            KBlock k;
            B::decode(p, k);
            for (int j = 0; j < 4; ++j) {
                _mm512_storeu_si512(u.w + 256 * b + 64 * j,
                                    _mm512_sub_epi8(k.codes[j], _mm512_set1_epi8(B::code_offset)));
            }
            u.d[b] = k.d;
            u.dmin[b] = B::has_min ? k.dmin : 0.0f;
            B::groups(p, u.scales + 256 / B::group * b, u.mins + 16 * b);
        }
    }
};

// y[(t0 + t) * ldy + r] for the T tokens from t0 and the rows of one tile.
template <class U, int T>
void tile_product(const Tile& tile, const BlockActs& x, int64_t t0, __mmask16 rows, float* y,
                  int64_t ldy) {
    const int64_t n_in = x.n_in, n_blocks = n_in / U::block, n_sums = n_in / act_sum_len;
    constexpr int64_t groups_per_block = U::block / U::group;
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
        __m512i isum[T];
        for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
        for (int64_t g = b * groups_per_block; g < (b + 1) * groups_per_block; ++g) {
            __m512i dot[T];
            const __m512i start = _mm512_load_si512(tile.start + 16 * g);
            for (int t = 0; t < T; ++t) dot[t] = start;
            for (int64_t k = g * U::group; k < (g + 1) * U::group; k += 4) {
                const __m512i wv = _mm512_load_si512(tile.w + 16 * k);
                for (int t = 0; t < T; ++t) {
                    const __m512i xb =
                        _mm512_set1_epi32(static_cast<int>(block_u32(x.qu + (t0 + t) * n_in + k)));
                    dot[t] = _mm512_dpbusd_epi32(dot[t], xb, wv);
                }
            }
            if constexpr (U::k) {
                const __m512i scale = _mm512_load_si512(tile.scales + 16 * g);
                for (int t = 0; t < T; ++t)
                    isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(dot[t], scale));
            } else {
                const __m512 d = _mm512_load_ps(tile.d + 16 * b);
                for (int t = 0; t < T; ++t) {
                    const int64_t at = (t0 + t) * n_blocks + b;
                    const __m512 scale = _mm512_mul_ps(d, _mm512_set1_ps(x.d[at]));
                    acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[t]), scale, acc[t]);
                    if constexpr (U::q8_1_mins) {
                        acc[t] = _mm512_fmadd_ps(_mm512_load_ps(tile.dmin + 16 * b),
                                                 _mm512_set1_ps(x.s[at]), acc[t]);
                    }
                }
            }
        }
        if constexpr (U::k) {
            const __m512 d = _mm512_load_ps(tile.d + 16 * b);
            for (int t = 0; t < T; ++t) {
                const float dx = x.d[(t0 + t) * n_blocks + b];
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]),
                                         _mm512_mul_ps(d, _mm512_set1_ps(dx)), acc[t]);
                if constexpr (U::k_mins) {
                    const int16_t* bsums = x.bsums + (t0 + t) * n_sums + 16 * b;
                    __m512i msum = _mm512_setzero_si512();
                    for (int j = 0; j < 8; ++j) {
                        msum = _mm512_dpwssd_epi32(
                            msum, _mm512_load_si512(tile.mins + 16 * (8 * b + j)),
                            _mm512_set1_epi32(static_cast<int>(
                                block_u32(reinterpret_cast<const uint8_t*>(bsums + 2 * j)))));
                    }
                    // Minus (dmin dx) times the mins' sum: the reference's rounding.
                    const __m512 dmin =
                        _mm512_mul_ps(_mm512_load_ps(tile.dmin + 16 * b), _mm512_set1_ps(dx));
                    acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), dmin, acc[t]);
                }
            }
        }
    }
    for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + (t0 + t) * ldy, rows, acc[t]);
}

// tile_product for 1 <= n <= T tokens.
template <class U, int T>
void tile_tokens(const Tile& tile, const BlockActs& x, int64_t t0, int64_t n, __mmask16 rows,
                 float* y, int64_t ldy) {
    if constexpr (T > 1) {
        if (n < T) return tile_tokens<U, T - 1>(tile, x, t0, n, rows, y, ldy);
    }
    tile_product<U, T>(tile, x, t0, rows, y, ldy);
}

// Rows o0.. o1 - 1 in tiles of 16, each unpacked and packed once for all tokens.
template <class U>
void gemm_rows(const BlockMatrix& w, const BlockActs& x, int64_t n_tokens, int64_t o0, int64_t o1,
               float* y, int64_t ldy) {
    const int64_t n_in = w.n_in, n_groups = n_in / U::group, n_blocks = n_in / U::block;
    const int64_t n_sums = n_in / act_sum_len;
    thread_local std::vector<int8_t, AlignedAllocator<int8_t>> rows_w, tile_w;
    thread_local std::vector<int32_t, AlignedAllocator<int32_t>> row_scales, tile_start,
        tile_scales, tile_mins;
    thread_local std::vector<float, AlignedAllocator<float>> row_d, row_dmin, tile_d, tile_dmin;
    thread_local std::vector<int16_t> row_mins;
    rows_w.resize(static_cast<size_t>(tile_rows * n_in));
    tile_w.resize(rows_w.size());
    row_scales.resize(static_cast<size_t>(tile_rows * n_groups));
    tile_start.resize(row_scales.size());
    tile_scales.resize(row_scales.size());
    row_d.resize(static_cast<size_t>(tile_rows * n_blocks));
    row_dmin.resize(row_d.size());
    tile_d.resize(row_d.size());
    tile_dmin.resize(row_d.size());
    row_mins.resize(static_cast<size_t>(tile_rows * n_sums));
    tile_mins.resize(static_cast<size_t>(tile_rows * n_sums / 2));
    const Tile tile{tile_w.data(), tile_start.data(), tile_scales.data(),
                    tile_d.data(), tile_dmin.data(),  tile_mins.data()};
    const __m512i row_starts =
        _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                           _mm512_set1_epi32(static_cast<int>(n_in)));
    for (int64_t o = o0; o < o1; o += tile_rows) {
        const int n_rows = static_cast<int>(std::min<int64_t>(tile_rows, o1 - o));
        for (int r = 0; r < tile_rows; ++r) {
            const RowUnpacked u{rows_w.data() + r * n_in, row_scales.data() + r * n_groups,
                                row_d.data() + r * n_blocks, row_dmin.data() + r * n_blocks,
                                row_mins.data() + r * n_sums};
            if (r < n_rows) {
                U::unpack_row(w.data + (o + r) * w.row_bytes, n_in, u);
            } else {
                // Rows past the matrix: zero weights and scales.
                std::memset(u.w, 0, static_cast<size_t>(n_in));
                std::fill(u.scales, u.scales + n_groups, 0);
                std::fill(u.d, u.d + n_blocks, 0.0f);
                std::fill(u.dmin, u.dmin + n_blocks, 0.0f);
                std::fill(u.mins, u.mins + n_sums, int16_t{0});
            }
        }
        // Four inputs of each row per lane; each group's weights summed as it goes.
        const __m512i ones = _mm512_set1_epi8(1);
        for (int64_t g = 0; g < n_groups; ++g) {
            __m512i sum = _mm512_setzero_si512();
            for (int64_t k = g * U::group; k < (g + 1) * U::group; k += 4) {
                const __m512i v = _mm512_i32gather_epi32(row_starts, rows_w.data() + k, 1);
                _mm512_store_si512(tile.w + 16 * k, v);
                sum = _mm512_dpbusd_epi32(sum, ones, v);
            }
            _mm512_store_si512(tile.start + 16 * g,
                               _mm512_mullo_epi32(sum, _mm512_set1_epi32(-128)));
        }
        for (int r = 0; r < tile_rows; ++r) {
            for (int64_t g = 0; g < n_groups; ++g)
                tile.scales[16 * g + r] = row_scales[r * n_groups + g];
            for (int64_t b = 0; b < n_blocks; ++b) {
                tile.d[16 * b + r] = row_d[r * n_blocks + b];
                tile.dmin[16 * b + r] = row_dmin[r * n_blocks + b];
            }
            for (int64_t j = 0; j < n_sums / 2; ++j) {
                const int16_t* m = row_mins.data() + r * n_sums + 2 * j;
                tile.mins[16 * j + r] =
                    static_cast<int32_t>(static_cast<uint16_t>(m[0]) |
                                         static_cast<uint32_t>(static_cast<uint16_t>(m[1])) << 16);
            }
        }
        const auto rows = static_cast<__mmask16>((1u << n_rows) - 1);
        for (int64_t t0 = 0; t0 < n_tokens; t0 += gemm_tokens) {
            tile_tokens<U, gemm_tokens>(tile, x, t0, std::min<int64_t>(gemm_tokens, n_tokens - t0),
                                        rows, y + o, ldy);
        }
    }
}

// ---- Rounding the activations (BlockIsa::round) ----

// Whether the 16 values are all finite: v - v is NaN for infinities and NaN.
inline bool all_finite(__m512 v) {
    return _mm512_cmp_ps_mask(_mm512_sub_ps(v, v), _mm512_setzero_ps(), _CMP_EQ_OQ) == 0xffff;
}

inline float f16_rounded(float v) {
    return _cvtsh_ss(_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT));
}

// q8_0 / q8_1 blocks of 32: d = max |x| / 127 kept as f16, q = x * (127 /
// max |x|) to nearest even (vcvtps2dq), as round_to_int8.
void round_blocks_32(const float* x, int64_t n_in, int8_t* q, float* d, float* s) {
    for (int64_t b = 0; b < n_in / 32; ++b) {
        const __m512 v0 = _mm512_loadu_ps(x + 32 * b), v1 = _mm512_loadu_ps(x + 32 * b + 16);
        if (!all_finite(v0) || !all_finite(v1)) {
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * b), _mm256_setzero_si256());
            d[b] = NAN;
            if (s) s[b] = NAN;
            continue;
        }
        const float amax =
            _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
        const float scale = amax / 127.0f;
        const __m512 inverse = _mm512_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
        const __m512i i0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, inverse));
        const __m512i i1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, inverse));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 32 * b), _mm512_cvtsepi32_epi8(i0));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 32 * b + 16), _mm512_cvtsepi32_epi8(i1));
        d[b] = f16_rounded(scale);
        if (s) {
            const int sum = _mm512_reduce_add_epi32(_mm512_add_epi32(i0, i1));
            s[b] = f16_rounded(scale * static_cast<float>(sum));
        }
    }
}

// q8_K blocks of 256: the first value of largest magnitude keeps its sign,
// d = max / -127 in f32, q = x * (-127 / max) to nearest even.
void round_blocks_256(const float* x, int64_t n_in, int8_t* q, float* d, int16_t* bsums) {
    for (int64_t b = 0; b < n_in / 256; ++b) {
        const float* xb = x + 256 * b;
        int8_t* qb = q + 256 * b;
        int16_t* sums = bsums + 16 * b;
        __m512 amax = _mm512_setzero_ps();
        bool finite = true;
        for (int k = 0; k < 16; ++k) {
            const __m512 v = _mm512_loadu_ps(xb + 16 * k);
            finite &= all_finite(v);
            amax = _mm512_max_ps(amax, _mm512_abs_ps(v));
        }
        const float m = _mm512_reduce_max_ps(amax);
        if (m == 0.0f || !finite) {
            std::memset(qb, 0, 256);
            std::memset(sums, 0, 16 * sizeof(int16_t));
            d[b] = finite ? 0.0f : NAN;
            continue;
        }
        float max = 0.0f;
        for (int k = 0; k < 16; ++k) {
            const __mmask16 at = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(xb + 16 * k)),
                                                    _mm512_set1_ps(m), _CMP_EQ_OQ);
            if (at) {
                max = xb[16 * k + __builtin_ctz(at)];
                break;
            }
        }
        const float iscale = -127.0f / max;
        for (int k = 0; k < 16; ++k) {
            const __m512i i = _mm512_cvtps_epi32(
                _mm512_mul_ps(_mm512_loadu_ps(xb + 16 * k), _mm512_set1_ps(iscale)));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(qb + 16 * k), _mm512_cvtsepi32_epi8(i));
            sums[k] = static_cast<int16_t>(_mm512_reduce_add_epi32(i));
        }
        d[b] = 1.0f / iscale;
    }
}

void round_token_avx512(ActFormat f, const float* x, int64_t n_in, int8_t* q, float* d, float* s,
                        int16_t* bsums) {
    f == ActFormat::q8_k ? round_blocks_256(x, n_in, q, d, bsums)
                         : round_blocks_32(x, n_in, q, d, f == ActFormat::q8_1 ? s : nullptr);
}

template <class L>
constexpr BlockGemv gemv = block_gemv_rows<L, pass_tokens>;

BlockGemv leaf(BlockType type) {
    switch (type) {
        case BlockType::q4_0:
            return gemv<Blocks32<Q4_0>>;
        case BlockType::q4_1:
            return gemv<Blocks32<Q4_1>>;
        case BlockType::q5_0:
            return gemv<Blocks32<Q5_0>>;
        case BlockType::q5_1:
            return gemv<Blocks32<Q5_1>>;
        case BlockType::q8_0:
            return gemv<Blocks32<Q8_0>>;
        case BlockType::iq4_nl:
            return gemv<Blocks32<IQ4_NL>>;
        case BlockType::q2_k:
            return gemv<BlocksK<Q2_K>>;
        case BlockType::q3_k:
            return gemv<BlocksK<Q3_K>>;
        case BlockType::q4_k:
            return gemv<BlocksK<QK4<4>>>;
        case BlockType::q5_k:
            return gemv<BlocksK<QK4<5>>>;
        case BlockType::q6_k:
            return gemv<BlocksK<Q6_K>>;
    }
    return nullptr;
}

}  // namespace

// Passes decode a K block once per pass_tokens and keep the task's rows in
// L2, which outruns packing tiles up to 32 tokens (Q6_K: 48, its pass the
// cheapest); 32-input types gain from the tiles from 17 tokens on (2048 x
// 2048, two threads).
BlockGemv gemm_leaf(BlockType type, int64_t n_tokens) {
    const bool k_type = act_format(type) == ActFormat::q8_k;
    if (k_type && n_tokens < (type == BlockType::q6_k ? 48 : 32)) return nullptr;
    switch (type) {
        case BlockType::q4_0:
            return gemm_rows<Gemm32<Q4_0>>;
        case BlockType::q4_1:
            return gemm_rows<Gemm32<Q4_1>>;
        case BlockType::q5_0:
            return gemm_rows<Gemm32<Q5_0>>;
        case BlockType::q5_1:
            return gemm_rows<Gemm32<Q5_1>>;
        case BlockType::q8_0:
            return gemm_rows<Gemm32<Q8_0>>;
        case BlockType::iq4_nl:
            return gemm_rows<Gemm32<IQ4_NL>>;
        case BlockType::q2_k:
            return gemm_rows<GemmK<Q2_K>>;
        case BlockType::q3_k:
            return gemm_rows<GemmK<Q3_K>>;
        case BlockType::q4_k:
            return gemm_rows<GemmK<QK4<4>>>;
        case BlockType::q5_k:
            return gemm_rows<GemmK<QK4<5>>>;
        case BlockType::q6_k:
            return gemm_rows<GemmK<Q6_K>>;
    }
    return nullptr;
}

const BlockIsa avx512_block_isa = {.name = "avx512",
                                   .pass_tokens = pass_tokens,
                                   .leaf = leaf,
                                   .gemm = gemm_leaf,
                                   .round = round_token_avx512};

}  // namespace anelm::kernels

#if defined(__clang__)
#pragma clang attribute pop
#endif
