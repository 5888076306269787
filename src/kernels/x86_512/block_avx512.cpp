// AVX-512 VNNI leaves for ggml block-quantized weights (block_isa.h): the
// matrix-vector products and the rounding of the activations; the GEMM for
// prompts is in block_gemm_avx512.cpp. Every block's integer sum is exact in
// int32 lanes and scaled as the reference scales it; only the order of the
// float additions differs.
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

// The VNNI instructions are these leaves' alone among the AVX-512 files they
// are compiled with (cmake/anelm_modules.cmake); block_active() checks for them.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512vnni"))), apply_to = function)
#else
#pragma GCC target("avx512vnni")
#endif
// GCC 12 flags its own _mm512_undefined_* inside AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "kernels/block_isa.h"
#include "kernels/x86_512/block_decode_avx512.h"

namespace anelm::kernels {

namespace {

constexpr int pass_tokens = 4;

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

constexpr auto leaf = block_leaf<pass_tokens, Blocks32, BlocksK, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
                                 IQ4_NL, Q2_K, Q3_K, QK4<4>, QK4<5>, Q6_K>;

}  // namespace

const BlockIsa avx512_block_isa = {.name = "avx512",
                                   .pass_tokens = pass_tokens,
                                   .leaf = leaf,
                                   .gemm = avx512_block_gemm,
                                   .round = round_token_avx512};

}  // namespace anelm::kernels

#if defined(__clang__)
#pragma clang attribute pop
#endif
