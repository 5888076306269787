// Inline helpers shared by the AVX2 + FMA + F16C files (the leaves are declared
// in avx2_leaves.h). Only files compiled with those flags include this header.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "exec/cpu/kernels/x86/avx2_leaves.h"

namespace anelm::kernels::avx2 {

// Storage of a weight dtype: f32 as float, f16 and bf16 as their bits.
template <DType D>
using Elem = std::conditional_t<D == DType::f32, float, uint16_t>;

// Eight consecutive values as f32.
template <DType D>
inline __m256 load8(const Elem<D>* p) {
    if constexpr (D == DType::f32) {
        return _mm256_loadu_ps(p);
    } else if constexpr (D == DType::f16) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    } else {
        const __m256i wide =
            _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
    }
}

// The first n (0 <= n <= 8) values as f32, zeros after: nothing past p + n is read.
template <DType D>
inline __m256 load_partial(const Elem<D>* p, int64_t n) {
    alignas(32) Elem<D> buffer[8] = {};
    std::memcpy(buffer, p, static_cast<size_t>(n) * sizeof(Elem<D>));
    return load8<D>(buffer);
}

// Stores the first n (0 <= n <= 8) lanes of v.
inline void store_partial(float* p, __m256 v, int64_t n) {
    alignas(32) float buffer[8];
    _mm256_store_ps(buffer, v);
    std::memcpy(p, buffer, static_cast<size_t>(n) * sizeof(float));
}

inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// The horizontal sums of four vectors, in order.
inline __m128 hsum4(__m256 a, __m256 b, __m256 c, __m256 d) {
    const __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

inline float hmax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

// e^x to about 1 ulp: x = n ln2 + r with |r| <= ln2 / 2, a degree-7 polynomial
// for e^r, 2^n through the exponent bits. Overflow gives inf, underflow 0, NaN stays NaN.
inline __m256 vexp(__m256 x) {
    const __m256 overflow = _mm256_cmp_ps(x, _mm256_set1_ps(88.72283935546875f), _CMP_GT_OQ);
    const __m256 underflow = _mm256_cmp_ps(x, _mm256_set1_ps(-87.33654022216797f), _CMP_LT_OQ);
    // max/min return their second operand when either is NaN, so NaN passes through.
    x = _mm256_min_ps(_mm256_set1_ps(88.3762626647949f),
                      _mm256_max_ps(_mm256_set1_ps(-87.33654022216797f), x));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
    const __m256i bits =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    const __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
    return _mm256_blendv_ps(_mm256_andnot_ps(underflow, y), _mm256_set1_ps(__builtin_inff()),
                            overflow);
}

}  // namespace anelm::kernels::avx2
