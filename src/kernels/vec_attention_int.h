// The attention leaf over int8 rows (attend_q8) in sixteen-bit integer dot
// products, written once over an instruction set's f32 layer F (vec_matmul.h)
// and integer layer I: int8 keys against the query rounded to int16 (step
// max|q| / 32767), int8 values against the softmax weights rounded to int16
// per tile of rows (step: the tile's largest weight / 32767). Sums of those
// products are exact in int32, so the two roundings, 1/32767 of the largest
// element, are all the error added: far under the int8 rows' own step.
// Widening each code to f32 for a multiply-add, as VecAttention does, bound
// that leaf by its arithmetic at depth, not by memory (docs/quantization.md).
//
// I provides W, a vector of `lanes` int32 (2 * lanes int16); zero, set1,
// load (2 * lanes aligned int16), load_codes (2 * lanes int8 widened to
// int16, the first n), dot (acc + a . b over int16 pairs), pair_lo / pair_hi
// (two rows' int16 codes interleaved), lane_sums (lane i = the sum of in[i]),
// sum, store, add_columns (out[0, n) += step * the f32 of pair_lo's and
// pair_hi's sums in column order) and round_to_int16.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/vec_attention.h"

namespace anelm::kernels {

template <class F, class I>
struct VecAttentionInt {
    using W = typename I::W;
    using Float = VecAttention<F>;
    static constexpr int lanes = I::lanes;
    static constexpr int64_t codes = 2 * lanes;  // int16 values in a W
    // Room for the query rounded to int16; wider heads take the f32 leaf.
    static constexpr int64_t max_head_dim = 512;
    // Value rows per tile: one rounding step per tile, and 4 KiB of rows of
    // 128 codes re-read from L1 for each column block.
    static constexpr int64_t tile_rows = 32;

    // Scores of H heads against int8 keys: scale * (key_scale_j * q_h . codes_j
    // + key_zero_j * sum(q_h)), q_h . codes_j as q_step_h * (q16_h . codes_j)
    // in int32. lanes / H keys per pass, so that one pass's sums fill one W.
    template <int H>
    static void key_scores(const int16_t* q16, int64_t padded, const float* q_step,
                           const float* q_sum, KvRows k, int64_t n_keys, int64_t head_dim,
                           float scale, float* scores) {
        constexpr int J = lanes / H;
        const auto score = [&](int h, int64_t j, int32_t dot) {
            scores[h * n_keys + j] =
                scale * (Float::bf16(k.scales[j]) * q_step[h] * static_cast<float>(dot) +
                         Float::bf16(k.zeros[j]) * q_sum[h]);
        };
        int64_t j0 = 0;
        for (; j0 + J <= n_keys; j0 += J) {
            Float::prefetch_keys_ahead(k.i8, (j0 + J) * head_dim, J * head_dim, n_keys * head_dim);
            W acc[lanes];
            for (auto& a : acc) a = I::zero();
            for (int64_t d = 0; d < head_dim; d += codes) {
#pragma GCC unroll 16
                for (int j = 0; j < J; ++j) {
                    const W c = I::load_codes(k.i8 + (j0 + j) * head_dim + d, head_dim - d);
#pragma GCC unroll 4
                    for (int h = 0; h < H; ++h)
                        acc[h * J + j] = I::dot(acc[h * J + j], c, I::load(q16 + h * padded + d));
                }
            }
            alignas(64) int32_t dots[lanes];
            I::store(dots, I::lane_sums(acc));
            for (int h = 0; h < H; ++h)
                for (int j = 0; j < J; ++j) score(h, j0 + j, dots[h * J + j]);
        }
        for (; j0 < n_keys; ++j0) {
            W acc[H];
            for (auto& a : acc) a = I::zero();
            for (int64_t d = 0; d < head_dim; d += codes) {
                const W c = I::load_codes(k.i8 + j0 * head_dim + d, head_dim - d);
                for (int h = 0; h < H; ++h)
                    acc[h] = I::dot(acc[h], c, I::load(q16 + h * padded + d));
            }
            for (int h = 0; h < H; ++h) score(h, j0, I::sum(acc[h]));
        }
    }

    // out_h = inv_sum_h * sum_j p_h[j] value_scale_j codes_j for H rows of
    // weights p_h = p + h * ldp (the rows' zeros left to add_value_zeros). Per
    // tile of rows the weights times their rows' scales are rounded to int16,
    // two rows' codes interleave so that one dot takes a pair of rows, and the
    // tile's int32 sums enter the f32 output with the tile's step.
    template <int H>
    static void values(const float* p, int64_t ldp, int64_t n_keys, KvRows v, int64_t width,
                       const float* inv_sum, float* out) {
        std::fill(out, out + H * width, 0.0f);
        alignas(64) int16_t w16[H][tile_rows];
        for (int64_t j0 = 0; j0 < n_keys; j0 += tile_rows) {
            const int64_t n = std::min(tile_rows, n_keys - j0);
            float step[H];
            for (int h = 0; h < H; ++h) {
                float weighted[tile_rows];
                for (int64_t j = 0; j < n; ++j)
                    weighted[j] = p[h * ldp + j0 + j] * Float::bf16(v.scales[j0 + j]);
                step[h] = I::round_to_int16(weighted, n, tile_rows, w16[h]) * inv_sum[h];
            }
            const int8_t* rows = v.i8 + j0 * width;
            // The next tile on its way while this one is read column block by column block.
            Float::prefetch_lines(rows, n * width, (n + tile_rows) * width, (n_keys - j0) * width);
            for (int64_t d = 0; d < width; d += codes) {
                W lo[H], hi[H];
                for (int h = 0; h < H; ++h) lo[h] = hi[h] = I::zero();
                for (int64_t j = 0; j < n; j += 2) {
                    const W a = I::load_codes(rows + j * width + d, width - d);
                    const W b = j + 1 < n ? I::load_codes(rows + (j + 1) * width + d, width - d)
                                          : I::zero();
                    const W pair_lo = I::pair_lo(a, b), pair_hi = I::pair_hi(a, b);
#pragma GCC unroll 4
                    for (int h = 0; h < H; ++h) {
                        int32_t pair;  // weights j and j + 1 (a zero pads an odd tile)
                        std::memcpy(&pair, &w16[h][j], sizeof pair);
                        const W wp = I::set1(pair);
                        lo[h] = I::dot(lo[h], pair_lo, wp);
                        hi[h] = I::dot(hi[h], pair_hi, wp);
                    }
                }
                for (int h = 0; h < H; ++h) {
                    I::add_columns(out + h * width + d, lo[h], hi[h], step[h],
                                   std::min(codes, width - d));
                }
            }
        }
    }

    template <int H>
    static void attend_heads(const float* q, KvRows k, KvRows v, int64_t n_keys, int64_t head_dim,
                             float scale, float* scores, float* out, float* lse) {
        if (k.i8) {
            const int64_t padded = (head_dim + codes - 1) / codes * codes;
            alignas(64) int16_t q16[H * max_head_dim];
            float q_step[H], q_sum[H];
            for (int h = 0; h < H; ++h) {
                const float* row = q + h * head_dim;
                q_step[h] = I::round_to_int16(row, head_dim, padded, q16 + h * padded);
                q_sum[h] = 0.0f;
                for (int64_t d = 0; d < head_dim; ++d) q_sum[h] += row[d];
            }
            key_scores<H>(q16, padded, q_step, q_sum, k, n_keys, head_dim, scale, scores);
        } else {
            Float::template key_scores<H>(q, k.f16, {}, n_keys, head_dim, scale, scores);
        }
        float inv_sum[H];
        Float::template exp_scores<H>(scores, n_keys, inv_sum, lse);
        values<H>(scores, n_keys, n_keys, v, head_dim, inv_sum, out);
        Float::template add_value_zeros<H>(scores, n_keys, v.zeros, head_dim, inv_sum, out);
    }

    static void attend_q8(const float* q, int64_t n_q, KvRows k, KvRows v, int64_t n_keys,
                          int64_t head_dim, float scale, float* scores, float* out, float* lse) {
        if (head_dim > max_head_dim) {
            Float::attend_q8(q, n_q, k, v, n_keys, head_dim, scale, scores, out, lse);
            return;
        }
        Float::in_groups(n_q, [&](auto heads, int64_t h) {
            attend_heads<decltype(heads)::value>(q + h * head_dim, k, v, n_keys, head_dim, scale,
                                                 scores + h * n_keys, out + h * head_dim,
                                                 lse ? lse + h : nullptr);
        });
    }
};

}  // namespace anelm::kernels
