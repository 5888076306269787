// Inline helpers and leaf declarations of the AVX-512 (F, BW, VL, DQ) dense
// leaves. Only files compiled with those flags include this header.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "kernels/isa.h"

namespace anelm::kernels::avx512 {

// Storage of a weight dtype: f32 as float, f16 and bf16 as their bits.
template <DType D>
using Elem = std::conditional_t<D == DType::f32, float, uint16_t>;

// The lanes [0, n) for 0 <= n <= 16.
inline __mmask16 first_lanes(int64_t n) {
    return _cvtu32_mask16((1u << n) - 1u);
}

inline __m512 widen_bf16(__m256i bits) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
}

// Sixteen consecutive values as f32.
template <DType D>
inline __m512 load16(const Elem<D>* p) {
    if constexpr (D == DType::f32) {
        return _mm512_loadu_ps(p);
    } else if constexpr (D == DType::f16) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    } else {
        return widen_bf16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
}

// The lanes of `mask` loaded as f32, zeros elsewhere. Masked lanes are never
// read, so a row's tail can be loaded without touching memory past its end.
template <DType D>
inline __m512 load16_masked(const Elem<D>* p, __mmask16 mask) {
    if constexpr (D == DType::f32) {
        return _mm512_maskz_loadu_ps(mask, p);
    } else if constexpr (D == DType::f16) {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, p));
    } else {
        return widen_bf16(_mm256_maskz_loadu_epi16(mask, p));
    }
}

// e^x to about 1 ulp, as avx2::vexp: x = n ln2 + r with |r| <= ln2 / 2, a
// degree-7 polynomial for e^r, 2^n through the exponent bits. Overflow gives
// inf, underflow 0, NaN stays NaN.
inline __m512 vexp(__m512 x) {
    const __mmask16 overflow =
        _mm512_cmp_ps_mask(x, _mm512_set1_ps(88.72283935546875f), _CMP_GT_OQ);
    const __mmask16 underflow =
        _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.33654022216797f), _CMP_LT_OQ);
    // max/min return their second operand when either is NaN, so NaN passes through.
    x = _mm512_min_ps(_mm512_set1_ps(88.3762626647949f),
                      _mm512_max_ps(_mm512_set1_ps(-87.33654022216797f), x));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
    const __m512i bits =
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    const __m512 y = _mm512_maskz_mov_ps(static_cast<__mmask16>(~underflow),
                                         _mm512_mul_ps(p, _mm512_castsi512_ps(bits)));
    return _mm512_mask_mov_ps(y, overflow, _mm512_set1_ps(__builtin_inff()));
}

// x[i] = exp(x[i] - max(x)) over n > 0 values; returns their sum and puts max(x)
// in a non-null max (in ops.cpp).
float exp_sum(float* x, int64_t n, float* max);

// The vector layer the portable blockings (vec_matmul.h, vec_ops.h) are
// written over: sixteen f32 lanes, partial vectors by masks.
struct Vec {
    using V = __m512;
    static constexpr int lanes = 16;

    static V zero() { return _mm512_setzero_ps(); }
    static V set1(float a) { return _mm512_set1_ps(a); }
    template <DType D>
    static V load(const Elem<D>* p) {
        return load16<D>(p);
    }
    template <DType D>
    static V load_first(const Elem<D>* p, int64_t n) {
        return load16_masked<D>(p, first_lanes(n));
    }
    // Sixteen int8 values as f32 (an int8 KV cache's rows).
    static V load_i8(const int8_t* p) {
        return _mm512_cvtepi32_ps(
            _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
    }
    static V load_first_i8(const int8_t* p, int64_t n) {
        return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(first_lanes(n), p)));
    }
    static V load_aligned(const float* p) { return _mm512_load_ps(p); }
    static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
    static void store_aligned(float* p, V v) { _mm512_store_ps(p, v); }
    static void store_first(float* p, V v, int64_t n) {
        _mm512_mask_storeu_ps(p, first_lanes(n), v);
    }
    static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
    static V add(V a, V b) { return _mm512_add_ps(a, b); }
    static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
    static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
    static V div(V a, V b) { return _mm512_div_ps(a, b); }
    // NaN in b passes through.
    static V max(V a, V b) { return _mm512_max_ps(a, b); }
    static V exp(V x) { return vexp(x); }
    static float exp_sum(float* x, int64_t n, float* max) { return avx512::exp_sum(x, n, max); }
    static float sum(V v) { return _mm512_reduce_add_ps(v); }
    static float max_lane(V v) { return _mm512_reduce_max_ps(v); }
    // out[0..4) = the sums of a, b, c and d.
    static void store_sums4(float* out, V a, V b, V c, V d) {
        const __m256 abcd =
            _mm256_hadd_ps(_mm256_hadd_ps(fold(a), fold(b)), _mm256_hadd_ps(fold(c), fold(d)));
        _mm_storeu_ps(out,
                      _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
    }
    // In place: rows r[0..16) become columns. Two rounds inside 128-bit lanes
    // leave 4x4 blocks transposed; two rounds of lane shuffles put them in place.
    static void transpose(V r[lanes]) {
        V t[16], s[16];
        for (int i = 0; i < 16; i += 2) {
            t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
            t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
        }
        for (int i = 0; i < 16; i += 4) {
            s[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
            s[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xee);
            s[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
            s[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xee);
        }
        // Lane l of s[4 b + j] holds column 4 l + j of rows 4 b .. 4 b + 3.
        for (int j = 0; j < 4; ++j) {
            const V even_lo = _mm512_shuffle_f32x4(s[j], s[4 + j], 0x88);
            const V odd_lo = _mm512_shuffle_f32x4(s[j], s[4 + j], 0xdd);
            const V even_hi = _mm512_shuffle_f32x4(s[8 + j], s[12 + j], 0x88);
            const V odd_hi = _mm512_shuffle_f32x4(s[8 + j], s[12 + j], 0xdd);
            r[j] = _mm512_shuffle_f32x4(even_lo, even_hi, 0x88);
            r[4 + j] = _mm512_shuffle_f32x4(odd_lo, odd_hi, 0x88);
            r[8 + j] = _mm512_shuffle_f32x4(even_lo, even_hi, 0xdd);
            r[12 + j] = _mm512_shuffle_f32x4(odd_lo, odd_hi, 0xdd);
        }
    }
    static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }

private:
    // A 512-bit sum folded to 256 bits.
    static __m256 fold(V v) {
        return _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    }
};

// Leaves, in matmul.cpp and ops.cpp.
void pack_panel(const Matrix& w, int64_t o0, int64_t n_rows, int64_t k0, int64_t kc, float* panel);
void gemm_tile(const float* xp, int64_t m, const float* panel, int64_t kc, float* y, int64_t ldy,
               int64_t n, bool accumulate);
void gemv(const Matrix& w, const float* x, int64_t n_tokens, int64_t o0, int64_t o1, float* y,
          int64_t ldy);
void rms_norm(const float* x, const float* gain, float gain_offset, int64_t n, float eps, float* y);
float softmax(float* x, int64_t n);
void sigmoid(const float* x, int64_t n, float* y);
void silu_mul(const float* gate, const float* up, int64_t n, float* out);
void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out);
void delta_rule_step(float* s, int64_t dk, int64_t dv, const float* q, const float* k,
                     const float* v, float beta, float decay, float* delta, float* o);
// In attention.cpp: attend_q8 with VNNI's integer dot products, for
// processors that have them.
void attend_q8_vnni(const float* q, int64_t n_q, KvRows k, KvRows v, int64_t n_keys,
                    int64_t head_dim, float scale, float* scores, float* out, float* lse);

// Tile shape of gemm_tile (nv vectors of 16 outputs by mr tokens: mr * nv
// accumulators and nv panel vectors out of 32 registers) and rows of the gemv
// token groups.
constexpr int nv = 3;
constexpr int mr = 8;
constexpr int nr = 16 * nv;
constexpr int gemv_tokens = 8;

}  // namespace anelm::kernels::avx512
