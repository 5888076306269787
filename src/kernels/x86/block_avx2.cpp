// AVX2 leaves for ggml block-quantized weights (block_isa.h). Every block's
// integer sum is exact in int32 lanes and scaled as the reference scales it;
// only the order of the float additions differs.
//
// Without VNNI, vpmaddubsw multiplies unsigned by signed bytes into 16-bit
// pair sums and vpmaddwd sums pairs of those into int32, each times a 16-bit
// factor. 32-input blocks go one to a vector: unsigned codes (Q4_1, Q5_1)
// meet the inputs as they are, signed weights (Q4_0, Q5_0, Q8_0, IQ4_NL) as
// their magnitudes against the inputs carrying their signs (vpsignb); a pair
// sum stays below 2 * 128 * 127 < 2^15. 256-input K blocks go as eight
// vectors of 32 unsigned codes (at most 63: pair sums below 2 * 63 * 127),
// their pairs multiplied by the sub-block's scale; code offsets (Q6_K's 32,
// Q3_K's 4) and mins (Q2_K, Q4_K, Q5_K) meet q8_K's sums of 16 inputs.
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <utility>

#include "kernels/block_isa.h"
#include "kernels/x86/round_avx2.h"

namespace anelm::kernels {

namespace {

constexpr int pass_tokens = 4;

inline float half_at(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return _cvtsh_ss(v);
}

inline __m256i load256(const void* p) {
    return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

inline __m128i load128(const void* p) {
    return _mm_loadu_si128(static_cast<const __m128i*>(p));
}

inline float hsum(__m256 v) {
    const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

// Bits of b shifted so that bit From lands on bit To (within each byte: the
// callers keep only bits that do not cross one).
template <int From, int To>
inline __m256i move_bits(__m256i b) {
    if constexpr (From < To) return _mm256_slli_epi16(b, To - From);
    if constexpr (From > To) return _mm256_srli_epi16(b, From - To);
    return b;
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

// 16 where bit j of the u32 at p is set, for the 32 bytes j.
inline __m256i fifth_bits(const uint8_t* p) {
    const __m256i bits = _mm256_set1_epi32(static_cast<int>(block_u32(p)));
    // Byte j takes byte j / 8 of the word, then tests its bit j % 8.
    const __m256i spread = _mm256_shuffle_epi8(
        bits, _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
    const __m256i mask = _mm256_set1_epi64x(0x8040201008040201);
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, mask), mask),
                            _mm256_set1_epi8(16));
}

// Each 32-input type: its block bytes, whether its weights are signed (else
// unsigned codes, with a min m at byte 2 that meets q8_1's s), and
// weights(p) the 32 weights of the block at p.
struct Q4_0 {
    static constexpr int64_t bytes = 18;
    static constexpr bool is_signed = true, has_min = false;
    static __m256i weights(const uint8_t* p) {
        return _mm256_sub_epi8(nibbles32(p + 2), _mm256_set1_epi8(8));
    }
};

struct Q4_1 {
    static constexpr int64_t bytes = 20;
    static constexpr bool is_signed = false, has_min = true;
    static __m256i weights(const uint8_t* p) { return nibbles32(p + 4); }
};

struct Q5_0 {
    static constexpr int64_t bytes = 22;
    static constexpr bool is_signed = true, has_min = false;
    static __m256i weights(const uint8_t* p) {
        return _mm256_sub_epi8(_mm256_or_si256(nibbles32(p + 6), fifth_bits(p + 2)),
                               _mm256_set1_epi8(16));
    }
};

struct Q5_1 {
    static constexpr int64_t bytes = 24;
    static constexpr bool is_signed = false, has_min = true;
    static __m256i weights(const uint8_t* p) {
        return _mm256_or_si256(nibbles32(p + 8), fifth_bits(p + 4));
    }
};

struct Q8_0 {
    static constexpr int64_t bytes = 34;
    static constexpr bool is_signed = true, has_min = false;
    static __m256i weights(const uint8_t* p) { return load256(p + 2); }
};

struct IQ4_NL {
    static constexpr int64_t bytes = 18;
    static constexpr bool is_signed = true, has_min = false;
    static __m256i weights(const uint8_t* p) {
        const __m256i table = _mm256_broadcastsi128_si256(_mm_setr_epi8(
            -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113));
        return _mm256_shuffle_epi8(table, nibbles32(p + 2));
    }
};

template <class B>
struct Blocks32 {
    template <int T>
    static void row_dot(const uint8_t* row, const BlockActs& x, float* sums) {
        __m256 acc[T];
        float min_sum[T] = {};
        for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
        const int64_t n_blocks = x.n_in / 32;
        const __m256i ones = _mm256_set1_epi16(1);
        for (int64_t b = 0; b < n_blocks; ++b) {
            const uint8_t* p = row + b * B::bytes;
            const __m256i w = B::weights(p);
            const __m256i uw = B::is_signed ? _mm256_abs_epi8(w) : w;
            const float dw = half_at(p);
            for (int t = 0; t < T; ++t) {
                __m256i xv = load256(x.q + t * x.n_in + b * 32);
                if constexpr (B::is_signed) xv = _mm256_sign_epi8(xv, w);
                const __m256i dot = _mm256_madd_epi16(_mm256_maddubs_epi16(uw, xv), ones);
                const int64_t k = t * n_blocks + b;
                acc[t] =
                    _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(dw * x.d[k]), acc[t]);
                if constexpr (B::has_min) min_sum[t] += half_at(p + 2) * x.s[k];
            }
        }
        for (int t = 0; t < T; ++t) sums[t] = hsum(acc[t]) + min_sum[t];
    }
};

// ---- K blocks of 256 inputs ----

// What a K type decodes once per block: d and dmin; 16-bit scales for
// chunk<C> to pick from; per 16 inputs the int16 factor of q8_K's sum that
// joins the integer sum (offset: minus the code offset times the scale) and
// the one that gives the mins' sum.
struct KState {
    float d = 0.0f, dmin = 0.0f;
    __m256i scales[2];
    __m256i offset, mins;
};

// scales[0] / [1]: scales 0-7 / 8-15 of 16 per-16 scales, in both lanes.
inline void halves_of_16(__m256i s16, KState& k) {
    k.scales[0] = _mm256_permute2x128_si256(s16, s16, 0x00);
    k.scales[1] = _mm256_permute2x128_si256(s16, s16, 0x11);
}

// The factors for the 16 pairs of chunk C (inputs 32C..32C+31) under per-16
// scales: groups 2C (low lane) and 2C + 1 (high lane).
template <int C>
inline __m256i chunk_scales_16(const KState& k) {
    constexpr int lo = (2 * C) % 8, hi = (2 * C + 1) % 8;
    const __m256i pick = _mm256_setr_epi8(
        2 * lo, 2 * lo + 1, 2 * lo, 2 * lo + 1, 2 * lo, 2 * lo + 1, 2 * lo, 2 * lo + 1, 2 * lo,
        2 * lo + 1, 2 * lo, 2 * lo + 1, 2 * lo, 2 * lo + 1, 2 * lo, 2 * lo + 1, 2 * hi, 2 * hi + 1,
        2 * hi, 2 * hi + 1, 2 * hi, 2 * hi + 1, 2 * hi, 2 * hi + 1, 2 * hi, 2 * hi + 1, 2 * hi,
        2 * hi + 1, 2 * hi, 2 * hi + 1, 2 * hi, 2 * hi + 1);
    return _mm256_shuffle_epi8(k.scales[C / 4], pick);
}

// Q2_K and Q3_K's 2-bit codes of chunk C: input 32s + l of half h is bits 2s
// of byte 32h + l.
template <int C>
inline __m256i two_bit_codes(const uint8_t* qs) {
    return _mm256_and_si256(_mm256_srli_epi16(load256(qs + 32 * (C / 4)), 2 * (C % 4)),
                            _mm256_set1_epi8(3));
}

// Each K type: begin(p, k) decodes what a block's chunks share,
// chunk<C>(p, k, codes, scales) the unsigned codes of inputs 32C..32C+31
// and the 16-bit factor of each pair of them.
//
// Q4_K (Bits 4) and Q5_K (Bits 5): inputs 64j..64j+63 in 32 bytes of nibbles
// (low: the first 32), Q5_K's fifth bit of input 32s + l bit s of qh byte l;
// one scale per 32 inputs.
template <int Bits>
struct QK4 {
    static constexpr int64_t bytes = Bits == 5 ? 176 : 144;
    static constexpr bool has_offset = false, has_min = true;
    static void begin(const uint8_t* p, KState& k) {
        k.d = half_at(p);
        k.dmin = half_at(p + 2);
        uint64_t scales, mins;
        k4_scales_mins(p + 4, scales, mins);
        k.scales[0] = _mm256_broadcastsi128_si256(
            _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(scales))));
        const __m128i m8 = _mm_cvtsi64_si128(static_cast<int64_t>(mins));
        k.mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
    }
    template <int C>
    static void chunk(const uint8_t* p, const KState& k, __m256i& codes, __m256i& scales) {
        const __m256i v = load256(p + (Bits == 5 ? 48 : 16) + 32 * (C / 2));
        codes = _mm256_and_si256(C % 2 ? _mm256_srli_epi16(v, 4) : v, _mm256_set1_epi8(0x0f));
        if constexpr (Bits == 5) {
            const __m256i bit =
                _mm256_and_si256(load256(p + 16), _mm256_set1_epi8(static_cast<char>(1 << C)));
            codes = _mm256_or_si256(codes, move_bits<C, 4>(bit));
        }
        scales = _mm256_shuffle_epi8(k.scales[0], _mm256_set1_epi16(2 * C | (2 * C + 1) << 8));
    }
};

// Q6_K: input 32s + l of half h has its low 4 bits in nibble s / 2 of ql byte
// 64h + 32(s % 2) + l, its top 2 in bits 2s of qh byte 32h + l; code - 32
// times an int8 scale per 16 inputs.
struct Q6_K {
    static constexpr int64_t bytes = 210;
    static constexpr bool has_offset = true, has_min = false;
    static void begin(const uint8_t* p, KState& k) {
        k.d = half_at(p + 208);
        const __m256i s16 = _mm256_cvtepi8_epi16(load128(p + 192));
        halves_of_16(s16, k);
        k.offset = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(s16, 5));
    }
    template <int C>
    static void chunk(const uint8_t* p, const KState& k, __m256i& codes, __m256i& scales) {
        constexpr int h = C / 4, s = C % 4;
        const __m256i v = load256(p + 64 * h + 32 * (s % 2));
        const __m256i low =
            _mm256_and_si256(s / 2 ? _mm256_srli_epi16(v, 4) : v, _mm256_set1_epi8(0x0f));
        const __m256i top = _mm256_and_si256(load256(p + 128 + 32 * h),
                                             _mm256_set1_epi8(static_cast<char>(3 << 2 * s)));
        codes = _mm256_or_si256(low, move_bits<2 * s, 4>(top));
        scales = chunk_scales_16<C>(k);
    }
};

// Q3_K: 2-bit codes plus 4 where bit 4h + s of hmask byte l is set (the
// weight is the code - 4); sixteen signed scales (q3_k_scales).
struct Q3_K {
    static constexpr int64_t bytes = 110;
    static constexpr bool has_offset = true, has_min = false;
    static void begin(const uint8_t* p, KState& k) {
        k.d = half_at(p + 108);
        const Q3KScales sc = q3_k_scales(p + 96);
        const __m256i s16 = _mm256_cvtepi8_epi16(
            _mm_setr_epi32(static_cast<int>(sc.words[0]), static_cast<int>(sc.words[1]),
                           static_cast<int>(sc.words[2]), static_cast<int>(sc.words[3])));
        halves_of_16(s16, k);
        k.offset = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(s16, 2));
    }
    template <int C>
    static void chunk(const uint8_t* p, const KState& k, __m256i& codes, __m256i& scales) {
        constexpr int bit = 4 * (C / 4) + C % 4;
        const __m256i high =
            _mm256_and_si256(load256(p), _mm256_set1_epi8(static_cast<char>(1 << bit)));
        codes = _mm256_or_si256(two_bit_codes<C>(p + 32), move_bits<bit, 2>(high));
        scales = chunk_scales_16<C>(k);
    }
};

// Q2_K: 2-bit codes; scale byte g holds the scale (low nibble) and min of
// inputs 16g..16g+15.
struct Q2_K {
    static constexpr int64_t bytes = 84;
    static constexpr bool has_offset = false, has_min = true;
    static void begin(const uint8_t* p, KState& k) {
        k.d = half_at(p + 80);
        k.dmin = half_at(p + 82);
        const __m128i sm = load128(p), low4 = _mm_set1_epi8(0x0f);
        halves_of_16(_mm256_cvtepu8_epi16(_mm_and_si128(sm, low4)), k);
        k.mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), low4));
    }
    template <int C>
    static void chunk(const uint8_t* p, const KState& k, __m256i& codes, __m256i& scales) {
        codes = two_bit_codes<C>(p + 16);
        scales = chunk_scales_16<C>(k);
    }
};

template <class B>
struct BlocksK {
    template <int T>
    static void row_dot(const uint8_t* row, const BlockActs& x, float* sums) {
        __m256 acc[T];
        for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
        const int64_t n_blocks = x.n_in / 256, n_sums = x.n_in / act_sum_len;
        for (int64_t b = 0; b < n_blocks; ++b) {
            const uint8_t* p = row + b * B::bytes;
            KState k;
            B::begin(p, k);
            __m256i isum[T];
            for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
            const int8_t* q = x.q + b * 256;
            [&]<int... C>(std::integer_sequence<int, C...>) {
                const auto chunk = [&]<int c>() {
                    __m256i codes, scales;
                    B::template chunk<c>(p, k, codes, scales);
                    for (int t = 0; t < T; ++t) {
                        const __m256i pairs =
                            _mm256_maddubs_epi16(codes, load256(q + t * x.n_in + 32 * c));
                        isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(pairs, scales));
                    }
                };
                (chunk.template operator()<C>(), ...);
            }
            (std::make_integer_sequence<int, 8>{});
            for (int t = 0; t < T; ++t) {
                const __m256i bsums = load256(x.bsums + t * n_sums + b * 16);
                if constexpr (B::has_offset)
                    isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(bsums, k.offset));
                const float dx = x.d[t * n_blocks + b];
                acc[t] =
                    _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_set1_ps(k.d * dx), acc[t]);
                if constexpr (B::has_min) {
                    // Minus (dmin dx) times the mins' sum: the reference's rounding.
                    acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(bsums, k.mins)),
                                             _mm256_set1_ps(-(k.dmin * dx)), acc[t]);
                }
            }
        }
        for (int t = 0; t < T; ++t) sums[t] = hsum(acc[t]);
    }
};

// ---- Rounding the activations (BlockIsa::round) ----

inline float f16_rounded(float v) {
    return _cvtsh_ss(_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT));
}

using avx2::abs_ps;
using avx2::max_abs_if_finite;

// round32 stored to q.
inline void round32(const float* x, __m256 scale, int8_t* q, int* sums) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), avx2::round32(x, scale, sums));
}

// q8_0 / q8_1 blocks of 32: d = max |x| / 127 kept as f16, q = x * (127 /
// max |x|) to nearest even, as round_to_int8.
void round_blocks_32(const float* x, int64_t n_in, int8_t* q, float* d, float* s) {
    for (int64_t b = 0; b < n_in / 32; ++b) {
        const float* xb = x + 32 * b;
        float m;
        if (!max_abs_if_finite(xb, 32, &m)) {
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * b), _mm256_setzero_si256());
            d[b] = NAN;
            if (s) s[b] = NAN;
            continue;
        }
        const float scale = m / 127.0f;
        int sums[2];
        round32(xb, _mm256_set1_ps(m > 0.0f ? 127.0f / m : 0.0f), q + 32 * b, sums);
        d[b] = f16_rounded(scale);
        if (s) s[b] = f16_rounded(scale * static_cast<float>(sums[0] + sums[1]));
    }
}

// q8_K blocks of 256: the first value of largest magnitude keeps its sign,
// d = max / -127 in f32, q = x * (-127 / max) to nearest even.
void round_blocks_256(const float* x, int64_t n_in, int8_t* q, float* d, int16_t* bsums) {
    for (int64_t b = 0; b < n_in / 256; ++b) {
        const float* xb = x + 256 * b;
        int8_t* qb = q + 256 * b;
        int16_t* sums = bsums + 16 * b;
        float m;
        const bool finite = max_abs_if_finite(xb, 256, &m);
        if (m == 0.0f || !finite) {
            std::memset(qb, 0, 256);
            std::memset(sums, 0, 16 * sizeof(int16_t));
            d[b] = finite ? 0.0f : NAN;
            continue;
        }
        float max = 0.0f;
        for (int k = 0; k < 32; ++k) {
            const int at = _mm256_movemask_ps(
                _mm256_cmp_ps(abs_ps(_mm256_loadu_ps(xb + 8 * k)), _mm256_set1_ps(m), _CMP_EQ_OQ));
            if (at) {
                max = xb[8 * k + __builtin_ctz(static_cast<unsigned>(at))];
                break;
            }
        }
        const float iscale = -127.0f / max;
        for (int k = 0; k < 8; ++k) {
            int pair[2];
            round32(xb + 32 * k, _mm256_set1_ps(iscale), qb + 32 * k, pair);
            sums[2 * k] = static_cast<int16_t>(pair[0]);
            sums[2 * k + 1] = static_cast<int16_t>(pair[1]);
        }
        d[b] = 1.0f / iscale;
    }
}

void round_token_avx2(ActFormat f, const float* x, int64_t n_in, int8_t* q, float* d, float* s,
                      int16_t* bsums) {
    f == ActFormat::q8_k ? round_blocks_256(x, n_in, q, d, bsums)
                         : round_blocks_32(x, n_in, q, d, f == ActFormat::q8_1 ? s : nullptr);
}

constexpr auto leaf = block_leaf<pass_tokens, Blocks32, BlocksK, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
                                 IQ4_NL, Q2_K, Q3_K, QK4<4>, QK4<5>, Q6_K>;

}  // namespace

const BlockIsa avx2_block_isa = {.name = "avx2",
                                 .pass_tokens = pass_tokens,
                                 .leaf = leaf,
                                 .gemm = nullptr,
                                 .round = round_token_avx2};

}  // namespace anelm::kernels
