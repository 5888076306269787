// The AVX-512 attention leaf over int8 rows (attend_q8) in integer dot
// products (VNNI's vpdpwssd, sixteen-bit pairs into int32): int8 keys against
// the query rounded to int16 (step max|q| / 32767), int8 values against the
// softmax weights rounded to int16 per tile of rows (step: the tile's largest
// weight / 32767). Sums of those products are exact, so the two roundings,
// ~1.5e-5 of the largest element, are all the error added: far under the
// int8 rows' own step. Widening each code to f32 for a multiply-add, as the
// f32 leaves do, made this leaf bound by arithmetic at depth, not by memory
// (bench/README.md, "Decode at depth"). Attention over f16 rows stays AVX2's
// (isa.cpp); f16 keys (k16v8) get their scores from the f32 blocking.

// The VNNI instructions are this leaf's alone among the AVX-512 files it is
// compiled with; isa.cpp calls it only where they are present.
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
#include <cstring>

#include "kernels/vec_attention.h"
#include "kernels/x86/avx2_leaves.h"
#include "kernels/x86_512/avx512.h"

namespace anelm::kernels::avx512 {
namespace {

using F32 = VecAttention<Vec>;

// Room for the query rounded to int16; wider heads take the f32 leaf.
constexpr int64_t max_head_dim = 512;
// Value rows per tile: one rounding step per tile, and 4 KiB of rows of 128
// codes re-read from L1 for each column block.
constexpr int64_t tile_rows = 32;
constexpr float int16_top = 32767.0f;

inline __mmask32 first_bytes(int64_t n) {
    return n >= 32 ? ~__mmask32{0} : _cvtu32_mask32((1u << n) - 1u);
}

// Thirty-two int8 codes (the first n) widened to int16.
inline __m512i load_codes(const int8_t* p, int64_t n) {
    const __m256i bytes = n >= 32 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))
                                  : _mm256_maskz_loadu_epi8(first_bytes(n), p);
    return _mm512_cvtepi8_epi16(bytes);
}

// Lane i of the result is the sum of the lanes of in[i]: pairs, then quads of
// rows summed inside 128-bit lanes, then the lanes themselves.
inline __m512i lane_sums(const __m512i in[16]) {
    __m512i t[8], u[4], w[2];
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

// out[0 .. padded) = x[0 .. n) rounded to int16 in steps of max|x| / 32767,
// zeros after n; returns the step (0 for an all-zero x).
float round_to_int16(const float* x, int64_t n, int64_t padded, int16_t* out) {
    __m512 top = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) {
        top = _mm512_max_ps(top, _mm512_abs_ps(load16_masked<DType::f32>(
                                     x + i, first_lanes(std::min<int64_t>(16, n - i)))));
    }
    const float max = _mm512_reduce_max_ps(top);
    const __m512 inv = _mm512_set1_ps(max > 0 ? int16_top / max : 0.0f);
    for (int64_t i = 0; i < padded; i += 16) {
        const __mmask16 m = first_lanes(std::clamp<int64_t>(n - i, 0, 16));
        const __m512 v = _mm512_mul_ps(load16_masked<DType::f32>(x + i, m), inv);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                            _mm512_cvtepi32_epi16(_mm512_cvtps_epi32(v)));
    }
    return max / int16_top;
}

// The scores of H heads against int8 keys: scale * (key_scale_j * q_h . codes_j
// + key_zero_j * sum(q_h)), q_h . codes_j as q_step_h * (q16_h . codes_j) in
// int32. 16 / H keys per pass, so that one pass's sums fill one vector.
template <int H>
void int8_key_scores(const int16_t* q16, int64_t padded, const float* q_step, const float* q_sum,
                     KvRows k, int64_t n_keys, int64_t head_dim, float scale, float* scores) {
    constexpr int J = 16 / H;
    const auto score = [&](int h, int64_t j, int32_t dot) {
        scores[h * n_keys + j] =
            scale * (F32::bf16(k.scales[j]) * q_step[h] * static_cast<float>(dot) +
                     F32::bf16(k.zeros[j]) * q_sum[h]);
    };
    int64_t j0 = 0;
    for (; j0 + J <= n_keys; j0 += J) {
        __m512i acc[16];
        for (auto& a : acc) a = _mm512_setzero_si512();
        for (int64_t d = 0; d < head_dim; d += 32) {
#pragma GCC unroll 16
            for (int j = 0; j < J; ++j) {
                const __m512i codes = load_codes(k.i8 + (j0 + j) * head_dim + d, head_dim - d);
#pragma GCC unroll 4
                for (int h = 0; h < H; ++h) {
                    acc[h * J + j] = _mm512_dpwssd_epi32(
                        acc[h * J + j], codes, _mm512_load_si512(q16 + h * padded + d));
                }
            }
        }
        alignas(64) int32_t dots[16];
        _mm512_store_si512(dots, lane_sums(acc));
        for (int h = 0; h < H; ++h)
            for (int j = 0; j < J; ++j) score(h, j0 + j, dots[h * J + j]);
    }
    for (; j0 < n_keys; ++j0) {
        __m512i acc[H];
        for (auto& a : acc) a = _mm512_setzero_si512();
        for (int64_t d = 0; d < head_dim; d += 32) {
            const __m512i codes = load_codes(k.i8 + j0 * head_dim + d, head_dim - d);
            for (int h = 0; h < H; ++h)
                acc[h] = _mm512_dpwssd_epi32(acc[h], codes, _mm512_load_si512(q16 + h * padded + d));
        }
        for (int h = 0; h < H; ++h) score(h, j0, _mm512_reduce_add_epi32(acc[h]));
    }
}

// After unpacking two rows' sixteen-bit codes, lane 4 l + i of the low half
// holds column 8 l + i and of the high half column 8 l + 4 + i (l a 128-bit
// lane, i < 4): these pick columns 0-15 and 16-31 back in order.
inline __m512 columns_in_order(__m512 lo, __m512 hi, bool upper) {
    const __m512i first = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
    const __m512i second =
        _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
    return _mm512_permutex2var_ps(lo, upper ? second : first, hi);
}

// out_h = inv_sum_h * sum_j p_h[j] value_scale_j codes_j for H rows of weights
// p_h = p + h * ldp (zeros of the rows left to add_value_zeros). Per tile of
// rows the weights with their rows' scales are rounded to int16, two rows'
// codes interleave so one vpdpwssd takes a pair of rows, and the tile's int32
// sums enter the f32 output with the tile's step.
template <int H>
void int8_values(const float* p, int64_t ldp, int64_t n_keys, KvRows v, int64_t width,
                 const float* inv_sum, float* out) {
    std::fill(out, out + H * width, 0.0f);
    alignas(64) int16_t w16[H][tile_rows];
    for (int64_t j0 = 0; j0 < n_keys; j0 += tile_rows) {
        const int64_t n = std::min(tile_rows, n_keys - j0);
        float step[H];
        for (int h = 0; h < H; ++h) {
            float weighted[tile_rows];
            for (int64_t j = 0; j < n; ++j)
                weighted[j] = p[h * ldp + j0 + j] * F32::bf16(v.scales[j0 + j]);
            // Weights are >= 0: the int16 range's sign is unused.
            step[h] = round_to_int16(weighted, n, tile_rows, w16[h]) * inv_sum[h];
        }
        const int8_t* rows = v.i8 + j0 * width;
        for (int64_t d = 0; d < width; d += 32) {
            __m512i lo[H], hi[H];
            for (int h = 0; h < H; ++h) lo[h] = hi[h] = _mm512_setzero_si512();
            for (int64_t j = 0; j < n; j += 2) {
                const __m512i a = load_codes(rows + j * width + d, width - d);
                const __m512i b = j + 1 < n ? load_codes(rows + (j + 1) * width + d, width - d)
                                            : _mm512_setzero_si512();
                const __m512i pair_lo = _mm512_unpacklo_epi16(a, b);
                const __m512i pair_hi = _mm512_unpackhi_epi16(a, b);
#pragma GCC unroll 4
                for (int h = 0; h < H; ++h) {
                    int32_t pair;
                    std::memcpy(&pair, &w16[h][j], sizeof pair);
                    const __m512i wp = _mm512_set1_epi32(pair);
                    lo[h] = _mm512_dpwssd_epi32(lo[h], pair_lo, wp);
                    hi[h] = _mm512_dpwssd_epi32(hi[h], pair_hi, wp);
                }
            }
            for (int h = 0; h < H; ++h) {
                const __m512 l = _mm512_cvtepi32_ps(lo[h]), u = _mm512_cvtepi32_ps(hi[h]);
                const __m512 s = _mm512_set1_ps(step[h]);
                for (int half = 0; half < 2 && d + 16 * half < width; ++half) {
                    float* o = out + h * width + d + 16 * half;
                    const __mmask16 m = first_lanes(std::min<int64_t>(16, width - d - 16 * half));
                    const __m512 sum = _mm512_fmadd_ps(columns_in_order(l, u, half == 1), s,
                                                       _mm512_maskz_loadu_ps(m, o));
                    _mm512_mask_storeu_ps(o, m, sum);
                }
            }
        }
    }
}

template <int H>
void attend_heads(const float* q, KvRows k, KvRows v, int64_t n_keys, int64_t head_dim,
                  float scale, float* scores, float* out, float* lse) {
    if (k.i8) {
        const int64_t padded = (head_dim + 31) / 32 * 32;
        alignas(64) int16_t q16[H * max_head_dim];
        float q_step[H], q_sum[H];
        for (int h = 0; h < H; ++h) {
            const float* row = q + h * head_dim;
            q_step[h] = round_to_int16(row, head_dim, padded, q16 + h * padded);
            q_sum[h] = 0.0f;
            for (int64_t d = 0; d < head_dim; ++d) q_sum[h] += row[d];
        }
        int8_key_scores<H>(q16, padded, q_step, q_sum, k, n_keys, head_dim, scale, scores);
    } else {
        F32::key_scores<H>(q, k.f16, {}, n_keys, head_dim, scale, scores);
    }
    float inv_sum[H];
    F32::exp_scores<H>(scores, n_keys, inv_sum, lse);
    int8_values<H>(scores, n_keys, n_keys, v, head_dim, inv_sum, out);
    F32::add_value_zeros<H>(scores, n_keys, v.zeros, head_dim, inv_sum, out);
}

}  // namespace

void attend_q8_vnni(const float* q, int64_t n_q, KvRows k, KvRows v, int64_t n_keys,
                    int64_t head_dim, float scale, float* scores, float* out, float* lse) {
    if (head_dim > max_head_dim) {
        avx2::attend_q8(q, n_q, k, v, n_keys, head_dim, scale, scores, out, lse);
        return;
    }
    F32::in_groups(n_q, [&](auto heads, int64_t h) {
        attend_heads<decltype(heads)::value>(q + h * head_dim, k, v, n_keys, head_dim, scale,
                                             scores + h * n_keys, out + h * head_dim,
                                             lse ? lse + h : nullptr);
    });
}

}  // namespace anelm::kernels::avx512

#if defined(__clang__)
#pragma clang attribute pop
#endif
