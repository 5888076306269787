// The AVX-512 attention leaf over int8 rows (attend_q8): vec_attention_int.h
// over VNNI's vpdpwssd (sixteen-bit pairs summed into int32, sixteen lanes).
// Attention over f16 rows stays AVX2's (isa.cpp); f16 keys (k16v8) get their
// scores from the f32 blocking.

// The VNNI instructions are this leaf's alone among the AVX-512 files it is
// compiled with; isa.cpp calls it only where they are present.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512vnni"))), apply_to = function)
#else
#pragma GCC target("avx512vnni")
#endif
// GCC 12 flags its own _mm512_undefined_* inside AVX-512 intrinsics.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <algorithm>

#include "kernels/vec_attention_int.h"
#include "kernels/x86_512/avx512.h"

namespace anelm::kernels::avx512 {
namespace {

// The integer layer of vec_attention_int.h.
struct Int16Dot {
    using W = __m512i;
    static constexpr int lanes = 16;

    static W zero() { return _mm512_setzero_si512(); }
    static W set1(int32_t x) { return _mm512_set1_epi32(x); }
    static W load(const int16_t* p) { return _mm512_load_si512(p); }
    static W load_codes(const int8_t* p, int64_t n) {
        const __m256i bytes = n >= 32 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))
                                      : _mm256_maskz_loadu_epi8(_cvtu32_mask32((1u << n) - 1u), p);
        return _mm512_cvtepi8_epi16(bytes);
    }
    static W dot(W acc, W a, W b) { return _mm512_dpwssd_epi32(acc, a, b); }
    static W pair_lo(W a, W b) { return _mm512_unpacklo_epi16(a, b); }
    static W pair_hi(W a, W b) { return _mm512_unpackhi_epi16(a, b); }
    static int32_t sum(W v) { return _mm512_reduce_add_epi32(v); }
    static void store(int32_t* p, W v) { _mm512_store_si512(p, v); }

    // Pairs, then quads of rows summed inside 128-bit lanes, then the lanes.
    static W lane_sums(const W in[16]) {
        W t[8], u[4], w[2];
        for (int i = 0; i < 8; ++i) {
            t[i] = _mm512_add_epi32(_mm512_unpacklo_epi32(in[2 * i], in[2 * i + 1]),
                                    _mm512_unpackhi_epi32(in[2 * i], in[2 * i + 1]));
        }
        for (int i = 0; i < 4; ++i) {
            u[i] = _mm512_add_epi32(_mm512_unpacklo_epi64(t[2 * i], t[2 * i + 1]),
                                    _mm512_unpackhi_epi64(t[2 * i], t[2 * i + 1]));
        }
        for (int i = 0; i < 2; ++i) {
            w[i] = _mm512_add_epi32(_mm512_shuffle_i32x4(u[2 * i], u[2 * i + 1], 0x88),
                                    _mm512_shuffle_i32x4(u[2 * i], u[2 * i + 1], 0xdd));
        }
        return _mm512_add_epi32(_mm512_shuffle_i32x4(w[0], w[1], 0x88),
                                _mm512_shuffle_i32x4(w[0], w[1], 0xdd));
    }

    // Lane 4 l + i of pair_lo's sums holds column 8 l + i and of pair_hi's
    // column 8 l + 4 + i (l a 128-bit lane, i < 4).
    static void add_columns(float* out, W lo, W hi, float step, int64_t n) {
        const __m512i first =
            _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
        const __m512i second =
            _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
        const __m512 l = _mm512_cvtepi32_ps(lo), u = _mm512_cvtepi32_ps(hi);
        const __m512 s = _mm512_set1_ps(step);
        for (int half = 0; half < 2 && 16 * half < n; ++half) {
            float* o = out + 16 * half;
            const __mmask16 m = first_lanes(std::min<int64_t>(16, n - 16 * half));
            const __m512 columns = _mm512_permutex2var_ps(l, half ? second : first, u);
            _mm512_mask_storeu_ps(o, m, _mm512_fmadd_ps(columns, s, _mm512_maskz_loadu_ps(m, o)));
        }
    }

    // out[0 .. padded) = x[0 .. n) rounded to int16 in steps of max|x| / 32767,
    // zeros after n; returns the step (0 for an all-zero x).
    static float round_to_int16(const float* x, int64_t n, int64_t padded, int16_t* out) {
        __m512 top = _mm512_setzero_ps();
        for (int64_t i = 0; i < n; i += 16) {
            const __mmask16 m = first_lanes(std::min<int64_t>(16, n - i));
            top = _mm512_max_ps(top, _mm512_abs_ps(_mm512_maskz_loadu_ps(m, x + i)));
        }
        const float max = _mm512_reduce_max_ps(top);
        const __m512 inv = _mm512_set1_ps(max > 0 ? 32767.0f / max : 0.0f);
        for (int64_t i = 0; i < padded; i += 16) {
            const __mmask16 m = first_lanes(std::clamp<int64_t>(n - i, 0, 16));
            const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), inv);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                                _mm512_cvtepi32_epi16(_mm512_cvtps_epi32(v)));
        }
        return max / 32767.0f;
    }
};

}  // namespace

void attend_q8_vnni(const float* q, int64_t n_q, KvRows k, KvRows v, int64_t n_keys,
                    int64_t head_dim, float scale, float* scores, float* out, float* lse) {
    VecAttentionInt<Vec, Int16Dot>::attend_q8(q, n_q, k, v, n_keys, head_dim, scale, scores, out,
                                              lse);
}

}  // namespace anelm::kernels::avx512

#if defined(__clang__)
#pragma clang attribute pop
#endif
