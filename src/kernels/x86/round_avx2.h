// Rounding f32 activations to int8 with AVX2, shared by the block leaves
// (q8 blocks) and the integer dot leaves (blocks of int8_block). Internal
// linkage: included only by files compiled for AVX2.
#pragma once

#include <immintrin.h>

#include "kernels/x86/avx2.h"

namespace anelm::kernels::avx2 {

// Whether the 8 values are all finite: v - v is NaN for infinities and NaN.
static inline bool all_finite(__m256 v) {
    return _mm256_movemask_ps(
               _mm256_cmp_ps(_mm256_sub_ps(v, v), _mm256_setzero_ps(), _CMP_EQ_OQ)) == 0xff;
}

static inline __m256 abs_ps(__m256 v) {
    return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
}

// The largest |x| of the n values at x (n a multiple of 8) in *max_abs, and
// whether all of them are finite.
static inline bool max_abs_if_finite(const float* x, int n, float* max_abs) {
    __m256 m = _mm256_setzero_ps();
    bool finite = true;
    for (int k = 0; k < n; k += 8) {
        const __m256 v = _mm256_loadu_ps(x + k);
        finite &= all_finite(v);
        m = _mm256_max_ps(m, abs_ps(v));
    }
    *max_abs = hmax(m);
    return finite;
}

static inline int hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1)));
}

// 32 values times `scale`, rounded to nearest even (vcvtps2dq) and saturated
// to int8, in order; their sums in sums[0] (the first 16) and [1].
static inline __m256i round32(const float* x, __m256 scale, int* sums) {
    __m256i i[4];
    for (int k = 0; k < 4; ++k)
        i[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), scale));
    sums[0] = hsum_epi32(_mm256_add_epi32(i[0], i[1]));
    sums[1] = hsum_epi32(_mm256_add_epi32(i[2], i[3]));
    // Packing works within 128-bit lanes: dwords of bytes come out as
    // i0[0-3], i1[0-3], i2[0-3], i3[0-3], i0[4-7], ...
    const __m256i bytes =
        _mm256_packs_epi16(_mm256_packs_epi32(i[0], i[1]), _mm256_packs_epi32(i[2], i[3]));
    return _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

}  // namespace anelm::kernels::avx2
