// Inline helpers and leaf declarations of the AVX-512 (F, BW, VL, DQ) dense
// leaves. Only files compiled with those flags include this header.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "exec/cpu/kernels/isa.h"

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

// Leaves, in matmul.cpp.
void pack_panel(const Matrix& w, int64_t o0, int64_t n_rows, int64_t k0, int64_t kc, float* panel);
void gemm_tile(const float* xp, int64_t m, const float* panel, int64_t kc, float* y, int64_t ldy,
               int64_t n, bool accumulate);
void gemv(const Matrix& w, const float* x, int64_t n_tokens, int64_t o0, int64_t o1, float* y,
          int64_t ldy);

// Tile shape of gemm_tile (nv vectors of 16 outputs by mr tokens: mr * nv
// accumulators and nv panel vectors out of 32 registers) and rows of the gemv
// token groups.
constexpr int nv = 3;
constexpr int mr = 8;
constexpr int nr = 16 * nv;
constexpr int gemv_tokens = 4;

}  // namespace anelm::kernels::avx512
