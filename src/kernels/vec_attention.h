// The attention leaves of isa.h (attend; attend_q8 where no integer leaf,
// vec_attention_int.h, runs: NEON, and heads wider than it holds), written
// once over an instruction set's vector layer F (see vec_matmul.h): the query heads of one
// kv head against its key rows, softmax, and the probability-weighted sum of
// its value rows, rows of f16 or of int8 with a bfloat16 scale and zero each
// (zero + scale * code). Up to four heads
// go together so each key and value vector is converted once for all. The
// same weighted sum over f32 rows is the weighted_rows leaf.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/isa.h"

namespace anelm::kernels {

template <class F>
struct VecAttention {
    using V = typename F::V;
    static constexpr int L = F::lanes;
    static constexpr int max_heads = 4;
    // The cache lines of bytes [from, min(to, end)) of p on their way to L1.
    static void prefetch_lines(const void* p, int64_t from, int64_t to, int64_t end) {
        const char* bytes = static_cast<const char*>(p);
        for (int64_t at = from; at < std::min(to, end); at += 64) F::prefetch(bytes + at);
    }

    // Before scoring the key rows up to byte `read_to` of `keys` (`end` bytes
    // in all): the next `span` bytes, 2 KiB further on. Without it a decode
    // step's attention at depth read its rows at about half the rate the
    // weights stream at (bench/README.md, "Decode attention at depth:
    // prefetching the rows").
    static void prefetch_keys_ahead(const void* keys, int64_t read_to, int64_t span, int64_t end) {
        constexpr int64_t ahead = 2048;
        prefetch_lines(keys, read_to + ahead, read_to + ahead + span, end);
    }

    // A bfloat16 scale or zero; here rather than from base/half.h so that each
    // instruction set's copy stays its own (this header's rule).
    static float bf16(uint16_t b) {
        uint32_t bits = static_cast<uint32_t>(b) << 16;
        float f;
        __builtin_memcpy(&f, &bits, sizeof f);
        return f;
    }

    // v(p) for the first len (<= L) values of p: f32, f16 bits or int8.
    template <class E>
    static V load(const E* p, int64_t len) {
        if constexpr (std::is_same_v<E, int8_t>) {
            return len == L ? F::load_i8(p) : F::load_first_i8(p, len);
        } else {
            constexpr DType D = std::is_same_v<E, float> ? DType::f32 : DType::f16;
            return len == L ? F::template load<D>(p) : F::template load_first<D>(p, len);
        }
    }

    // scores[h * n_keys + j0 + j] = scale * q_h . k_(j0 + j) for H heads and J
    // keys; int8 keys (k.scales non-null) as zero_j * sum(q_h) + scale_j * q_h .
    // codes_j, q_sums holding sum(q_h).
    template <int H, int J, class E>
    static void score_block(const float* q, const E* k, KvRows k_rows, const float* q_sums,
                            int64_t j0, int64_t n_keys, int64_t head_dim, float scale,
                            float* scores) {
        const E* rows = k + j0 * head_dim;
        V acc[H][J];
#pragma GCC unroll 4
        for (int h = 0; h < H; ++h) {
#pragma GCC unroll 4
            for (int j = 0; j < J; ++j) acc[h][j] = F::zero();
        }
        for (int64_t d = 0; d < head_dim; d += L) {
            const int64_t len = head_dim - d < L ? head_dim - d : L;
            V kv[J];
#pragma GCC unroll 4
            for (int j = 0; j < J; ++j) kv[j] = load(rows + j * head_dim + d, len);
#pragma GCC unroll 4
            for (int h = 0; h < H; ++h) {
                const V qv = load(q + h * head_dim + d, len);
#pragma GCC unroll 4
                for (int j = 0; j < J; ++j) acc[h][j] = F::fma(qv, kv[j], acc[h][j]);
            }
        }
        float key_scale[J], key_zero[J];
#pragma GCC unroll 4
        for (int j = 0; j < J; ++j) {
            key_scale[j] = k_rows.scales ? scale * bf16(k_rows.scales[j0 + j]) : scale;
            key_zero[j] = k_rows.scales ? scale * bf16(k_rows.zeros[j0 + j]) : 0.0f;
        }
#pragma GCC unroll 4
        for (int h = 0; h < H; ++h) {
            const float q_sum = k_rows.scales ? q_sums[h] : 0.0f;
#pragma GCC unroll 4
            for (int j = 0; j < J; ++j)
                scores[h * n_keys + j0 + j] =
                    F::sum(acc[h][j]) * key_scale[j] + key_zero[j] * q_sum;
        }
    }

    // out_h[d0 .. d0 + L VB) = inv_sum_h * sum_j p_h[j] v_j[d0 ..] for H rows
    // of weights p_h = p + h * ldp, the accumulators in registers across all
    // rows v_j of `width` values (f32, f16 or int8 codes times v_scales[j], their
    // zeros left to add_value_zeros). `len`
    // < L marks a partial vector; a null inv_sum scales by 1. With `resume`
    // the sums continue from what out holds (unscaled), so the rows can come
    // in tiles.
    template <int H, int VB, class E>
    static void value_block(const float* p, int64_t ldp, int64_t n_keys, const E* v,
                            const uint16_t* v_scales, int64_t width, int64_t d0, int64_t len,
                            bool resume, const float* inv_sum, float* out) {
        V acc[H][VB];
#pragma GCC unroll 4
        for (int h = 0; h < H; ++h) {
#pragma GCC unroll 8
            for (int b = 0; b < VB; ++b) {
                const float* o = out + h * width + d0 + L * b;
                acc[h][b] = !resume    ? F::zero()
                            : len == L ? F::template load<DType::f32>(o)
                                       : F::template load_first<DType::f32>(o, len);
            }
        }
        for (int64_t j = 0; j < n_keys; ++j) {
            const E* row = v + j * width + d0;
            V vv[VB];
#pragma GCC unroll 8
            for (int b = 0; b < VB; ++b) vv[b] = load(row + L * b, len);
            const float row_scale = v_scales ? bf16(v_scales[j]) : 1.0f;
#pragma GCC unroll 4
            for (int h = 0; h < H; ++h) {
                const V pj = F::set1(p[h * ldp + j] * row_scale);
#pragma GCC unroll 8
                for (int b = 0; b < VB; ++b) acc[h][b] = F::fma(pj, vv[b], acc[h][b]);
            }
        }
#pragma GCC unroll 4
        for (int h = 0; h < H; ++h) {
            const V inv = F::set1(inv_sum ? inv_sum[h] : 1.0f);
#pragma GCC unroll 8
            for (int b = 0; b < VB; ++b) {
                float* o = out + h * width + d0 + L * b;
                const V s = inv_sum ? F::mul(acc[h][b], inv) : acc[h][b];
                len == L ? F::store(o, s) : F::store_first(o, s, len);
            }
        }
    }

    // Every column block of value_block for H rows of weights: 32 values per
    // pass for one or two rows, 16 for more, about eight accumulators. The
    // rows go in tiles of about 4 KiB, every column block of a tile before
    // the next: one pass over all rows per column block read them from memory
    // with a stride of a row, at about half the rate of a sequential read.
    template <int H, class E>
    static void values(const float* p, int64_t ldp, int64_t n_keys, const E* v,
                       const uint16_t* v_scales, int64_t width, const float* inv_sum, float* out) {
        constexpr int VB = (H <= 2 ? 32 : 16) / L;
        const int64_t row_bytes = std::max<int64_t>(1, width * static_cast<int64_t>(sizeof(E)));
        const int64_t tile = std::max<int64_t>(8, 4096 / row_bytes);
        int64_t j0 = 0;
        do {  // once at least, so that no rows still write zeros
            const int64_t n = n_keys - j0 < tile ? n_keys - j0 : tile;
            const bool resume = j0 > 0;
            const float* scale = j0 + n == n_keys ? inv_sum : nullptr;
            const float* pt = p + j0;
            const E* vt = v + j0 * width;
            // The next tile on its way while this one is read column block by column block.
            prefetch_lines(vt, n * row_bytes, (n + tile) * row_bytes, (n_keys - j0) * row_bytes);
            const uint16_t* st = v_scales ? v_scales + j0 : nullptr;
            int64_t d = 0;
            for (; d + L * VB <= width; d += L * VB)
                value_block<H, VB>(pt, ldp, n, vt, st, width, d, L, resume, scale, out);
            for (; d < width; d += L) {
                const int64_t len = width - d < L ? width - d : L;
                value_block<H, 1>(pt, ldp, n, vt, st, width, d, len, resume, scale, out);
            }
            j0 += n;
        } while (j0 < n_keys);
    }

    // out_h += inv_sum_h * sum_j p_h[j] zero_j: the part of the int8 value
    // rows' weighted sum that their zeros add to every column.
    template <int H>
    static void add_value_zeros(const float* p, int64_t n_keys, const uint16_t* v_zeros,
                                int64_t width, const float* inv_sum, float* out) {
        V acc[H];
        for (int h = 0; h < H; ++h) acc[h] = F::zero();
        for (int64_t j = 0; j < n_keys; j += L) {
            const int64_t len = n_keys - j < L ? n_keys - j : L;
            const V z = len == L ? F::template load<DType::bf16>(v_zeros + j)
                                 : F::template load_first<DType::bf16>(v_zeros + j, len);
            for (int h = 0; h < H; ++h) acc[h] = F::fma(load(p + h * n_keys + j, len), z, acc[h]);
        }
        for (int h = 0; h < H; ++h) {
            const float sum = F::sum(acc[h]) * inv_sum[h];
            for (int64_t d = 0; d < width; ++d) out[h * width + d] += sum;
        }
    }

    // scores[h * n_keys + j] = scale * q_h . k_j for H heads, keys per pass
    // chosen to keep about eight accumulators. k_rows gives int8 keys' scales
    // and zeros (null for f16 keys).
    template <int H, class EK>
    static void key_scores(const float* q, const EK* k, KvRows k_rows, int64_t n_keys,
                           int64_t head_dim, float scale, float* scores) {
        constexpr int J = H <= 2 ? 4 : 2;
        float q_sums[H] = {};
        for (int h = 0; k_rows.scales && h < H; ++h)
            for (int64_t d = 0; d < head_dim; ++d) q_sums[h] += q[h * head_dim + d];
        const int64_t row_bytes = head_dim * static_cast<int64_t>(sizeof(EK));
        int64_t j = 0;
        for (; j + J <= n_keys; j += J) {
            prefetch_keys_ahead(k, (j + J) * row_bytes, J * row_bytes, n_keys * row_bytes);
            score_block<H, J>(q, k, k_rows, q_sums, j, n_keys, head_dim, scale, scores);
        }
        for (; j < n_keys; ++j)
            score_block<H, 1>(q, k, k_rows, q_sums, j, n_keys, head_dim, scale, scores);
    }

    // Each head's scores become exp(score - max), unnormalised: inv_sum[h]
    // gets 1 / their sum for the output scaling, and a non-null lse each
    // head's log-sum-exp of its scores.
    template <int H>
    static void exp_scores(float* scores, int64_t n_keys, float* inv_sum, float* lse) {
        for (int h = 0; h < H; ++h) {
            float max;
            const float sum = F::exp_sum(scores + h * n_keys, n_keys, &max);
            inv_sum[h] = 1.0f / sum;
            if (lse) lse[h] = max + std::log(sum);
        }
    }

    // k and v are the rows' elements; k_rows and v_rows give their scales
    // and zeros (null for f16 rows).
    template <int H, class EK, class EV>
    static void attend_heads(const float* q, const EK* k, KvRows k_rows, const EV* v, KvRows v_rows,
                             int64_t n_keys, int64_t head_dim, float scale, float* scores,
                             float* out, float* lse) {
        key_scores<H>(q, k, k_rows, n_keys, head_dim, scale, scores);
        float inv_sum[H];
        exp_scores<H>(scores, n_keys, inv_sum, lse);
        values<H>(scores, n_keys, n_keys, v, v_rows.scales, head_dim, inv_sum, out);
        if (v_rows.zeros) add_value_zeros<H>(scores, n_keys, v_rows.zeros, head_dim, inv_sum, out);
    }

    template <class EK, class EV>
    static void attend_rows(const float* q, int64_t n_q, const EK* k, KvRows k_rows, const EV* v,
                            KvRows v_rows, int64_t n_keys, int64_t head_dim, float scale,
                            float* scores, float* out, float* lse) {
        in_groups(n_q, [&](auto heads, int64_t h) {
            attend_heads<decltype(heads)::value>(q + h * head_dim, k, k_rows, v, v_rows, n_keys,
                                                 head_dim, scale, scores + h * n_keys,
                                                 out + h * head_dim, lse ? lse + h : nullptr);
        });
    }

    // fn(std::integral_constant<int, H>{}, first) for groups of up to max_heads
    // of n rows.
    template <class Fn>
    static void in_groups(int64_t n, Fn fn) {
        for (int64_t h = 0; h < n; h += max_heads) {
            switch (n - h < max_heads ? n - h : max_heads) {
                case 1:
                    fn(std::integral_constant<int, 1>{}, h);
                    break;
                case 2:
                    fn(std::integral_constant<int, 2>{}, h);
                    break;
                case 3:
                    fn(std::integral_constant<int, 3>{}, h);
                    break;
                default:
                    fn(std::integral_constant<int, 4>{}, h);
                    break;
            }
        }
    }

    static void attend(const float* q, int64_t n_q, const uint16_t* k, const uint16_t* v,
                       int64_t n_keys, int64_t head_dim, float scale, float* scores, float* out,
                       float* lse) {
        attend_rows(q, n_q, k, {}, v, {}, n_keys, head_dim, scale, scores, out, lse);
    }

    static void attend_q8(const float* q, int64_t n_q, KvRows k, KvRows v, int64_t n_keys,
                          int64_t head_dim, float scale, float* scores, float* out, float* lse) {
        if (k.i8) {
            attend_rows(q, n_q, k.i8, k, v.i8, v, n_keys, head_dim, scale, scores, out, lse);
        } else {
            attend_rows(q, n_q, k.f16, {}, v.i8, v, n_keys, head_dim, scale, scores, out, lse);
        }
    }

    // out[s, :] = sum_t a[s * lda + t] rows[t, :] (the weighted_rows leaf).
    static void weighted_rows(const float* a, int64_t n_sets, int64_t lda, const float* rows,
                              int64_t n_rows, int64_t width, float* out) {
        in_groups(n_sets, [&](auto sets, int64_t s) {
            values<decltype(sets)::value>(a + s * lda, lda, n_rows, rows, nullptr, width, nullptr,
                                          out + s * width);
        });
    }
};

}  // namespace anelm::kernels
