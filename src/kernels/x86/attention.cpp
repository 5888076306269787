// AVX2 attention leaves (attend, attend_q8, weighted_rows): vec_attention.h
// over the AVX2 vector layer, and over int8 rows vec_attention_int.h with
// vpmaddwd (sixteen-bit pairs summed into int32, eight lanes) and vpaddd.
#include <algorithm>
#include <cstring>

#include "kernels/vec_attention_int.h"
#include "kernels/x86/avx2.h"

namespace anelm::kernels::avx2 {
namespace {

// The integer layer of vec_attention_int.h.
struct Int16Dot {
    using W = __m256i;
    static constexpr int lanes = 8;

    static W zero() { return _mm256_setzero_si256(); }
    static W set1(int32_t x) { return _mm256_set1_epi32(x); }
    static W load(const int16_t* p) { return _mm256_load_si256(reinterpret_cast<const W*>(p)); }
    static W load_codes(const int8_t* p, int64_t n) {
        if (n >= 16)
            return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        alignas(16) int8_t tail[16] = {};
        std::memcpy(tail, p, static_cast<size_t>(n));
        return _mm256_cvtepi8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(tail)));
    }
    static W dot(W acc, W a, W b) { return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)); }
    static W pair_lo(W a, W b) { return _mm256_unpacklo_epi16(a, b); }
    static W pair_hi(W a, W b) { return _mm256_unpackhi_epi16(a, b); }
    static void store(int32_t* p, W v) { _mm256_store_si256(reinterpret_cast<W*>(p), v); }
    static int32_t sum(W v) {
        __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
        return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 1)));
    }

    // Pairs, then quads of rows summed inside 128-bit lanes, then the lanes.
    static W lane_sums(const W in[8]) {
        W t[4], u[2];
        for (int i = 0; i < 4; ++i) {
            t[i] = _mm256_add_epi32(_mm256_unpacklo_epi32(in[2 * i], in[2 * i + 1]),
                                    _mm256_unpackhi_epi32(in[2 * i], in[2 * i + 1]));
        }
        for (int i = 0; i < 2; ++i) {
            u[i] = _mm256_add_epi32(_mm256_unpacklo_epi64(t[2 * i], t[2 * i + 1]),
                                    _mm256_unpackhi_epi64(t[2 * i], t[2 * i + 1]));
        }
        return _mm256_add_epi32(_mm256_permute2x128_si256(u[0], u[1], 0x20),
                                _mm256_permute2x128_si256(u[0], u[1], 0x31));
    }

    // Lane 4 l + i of pair_lo's sums holds column 8 l + i and of pair_hi's
    // column 8 l + 4 + i (l a 128-bit lane, i < 4).
    static void add_columns(float* out, W lo, W hi, float step, int64_t n) {
        const __m256 l = _mm256_cvtepi32_ps(lo), u = _mm256_cvtepi32_ps(hi);
        const __m256 s = _mm256_set1_ps(step);
        for (int half = 0; half < 2 && 8 * half < n; ++half) {
            float* o = out + 8 * half;
            const int64_t len = std::min<int64_t>(8, n - 8 * half);
            const __m256 columns =
                half ? _mm256_permute2f128_ps(l, u, 0x31) : _mm256_permute2f128_ps(l, u, 0x20);
            if (len == 8) {
                _mm256_storeu_ps(o, _mm256_fmadd_ps(columns, s, _mm256_loadu_ps(o)));
            } else {
                store_partial(o, _mm256_fmadd_ps(columns, s, load_partial<DType::f32>(o, len)),
                              len);
            }
        }
    }

    // out[0 .. padded) = x[0 .. n) rounded to int16 in steps of max|x| / 32767,
    // zeros after n; returns the step (0 for an all-zero x).
    static float round_to_int16(const float* x, int64_t n, int64_t padded, int16_t* out) {
        const __m256 sign = _mm256_set1_ps(-0.0f);
        __m256 top = _mm256_setzero_ps();
        for (int64_t i = 0; i < n; i += 8) {
            const __m256 v =
                i + 8 <= n ? _mm256_loadu_ps(x + i) : load_partial<DType::f32>(x + i, n - i);
            top = _mm256_max_ps(top, _mm256_andnot_ps(sign, v));
        }
        const float max = hmax(top);
        const __m256 inv = _mm256_set1_ps(max > 0 ? 32767.0f / max : 0.0f);
        for (int64_t i = 0; i < padded; i += 8) {
            const int64_t len = std::clamp<int64_t>(n - i, 0, 8);
            const __m256 v =
                len == 8 ? _mm256_loadu_ps(x + i) : load_partial<DType::f32>(x + i, len);
            const __m256i r = _mm256_cvtps_epi32(_mm256_mul_ps(v, inv));
            // Packing works inside 128-bit lanes: gather the two lanes' halves.
            const __m256i packed = _mm256_permute4x64_epi64(_mm256_packs_epi32(r, r), 0x08);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_castsi256_si128(packed));
        }
        return max / 32767.0f;
    }
};

}  // namespace

void attend(const float* q, int64_t n_q, const uint16_t* k, const uint16_t* v, int64_t n_keys,
            int64_t head_dim, float scale, float* scores, float* out, float* lse) {
    VecAttention<Vec>::attend(q, n_q, k, v, n_keys, head_dim, scale, scores, out, lse);
}

void attend_q8(const float* q, int64_t n_q, KvRows k, KvRows v, int64_t n_keys, int64_t head_dim,
               float scale, float* scores, float* out, float* lse) {
    VecAttentionInt<Vec, Int16Dot>::attend_q8(q, n_q, k, v, n_keys, head_dim, scale, scores, out,
                                              lse);
}

void weighted_rows(const float* a, int64_t n_sets, int64_t lda, const float* rows, int64_t n_rows,
                   int64_t width, float* out) {
    VecAttention<Vec>::weighted_rows(a, n_sets, lda, rows, n_rows, width, out);
}

}  // namespace anelm::kernels::avx2
