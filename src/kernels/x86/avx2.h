// Inline helpers shared by the AVX2 + FMA + F16C files (the leaves are declared
// in avx2_leaves.h). Only files compiled with those flags include this header.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/x86/avx2_leaves.h"

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

// The vector layer the portable blockings (vec_matmul.h, vec_attention.h)
// are written over: eight f32 lanes.
struct Vec {
    using V = __m256;
    static constexpr int lanes = 8;

    static V zero() { return _mm256_setzero_ps(); }
    static V set1(float a) { return _mm256_set1_ps(a); }
    template <DType D>
    static V load(const Elem<D>* p) {
        return load8<D>(p);
    }
    template <DType D>
    static V load_first(const Elem<D>* p, int64_t n) {
        return load_partial<D>(p, n);
    }
    // Eight int8 values as f32 (an int8 KV cache's rows).
    static V load_i8(const int8_t* p) {
        int64_t bits;
        std::memcpy(&bits, p, sizeof bits);
        return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(bits)));
    }
    static V load_first_i8(const int8_t* p, int64_t n) {
        int64_t bits = 0;
        std::memcpy(&bits, p, static_cast<size_t>(n));
        return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(bits)));
    }
    static V load_aligned(const float* p) { return _mm256_load_ps(p); }
    static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
    static void store_aligned(float* p, V v) { _mm256_store_ps(p, v); }
    static void store_first(float* p, V v, int64_t n) { store_partial(p, v, n); }
    static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
    static V add(V a, V b) { return _mm256_add_ps(a, b); }
    static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
    static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
    static V div(V a, V b) { return _mm256_div_ps(a, b); }
    // NaN in b passes through.
    static V max(V a, V b) { return _mm256_max_ps(a, b); }
    static V exp(V x) { return vexp(x); }
    static float sum(V v) { return hsum(v); }
    static float max_lane(V v) { return hmax(v); }
    // out[0..4) = the sums of a, b, c and d.
    static void store_sums4(float* out, V a, V b, V c, V d) {
        _mm_storeu_ps(out, hsum4(a, b, c, d));
    }
    // In place: rows r[0..8) become columns.
    static void transpose(V r[lanes]) {
        V t[8], s[8];
        for (int i = 0; i < 8; i += 2) {
            t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
            t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
        }
        for (int i = 0; i < 8; i += 4) {
            s[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
            s[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
            s[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
            s[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
        }
        for (int i = 0; i < 4; ++i) {
            r[i] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x20);
            r[i + 4] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x31);
        }
    }
    static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
    static float exp_sum(float* x, int64_t n, float* max) { return avx2::exp_sum(x, n, max); }
};

}  // namespace anelm::kernels::avx2
