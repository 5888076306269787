// NEON attention leaf: the query heads of one kv head against its f16 key
// rows, softmax, and the probability-weighted sum of its f16 value rows. Up to
// four heads go together so each key and value vector is converted once for all.
#include "exec/cpu/kernels/arm/neon.h"

namespace anelm::kernels::neon {

namespace {

constexpr int max_heads = 4;

// scores[h * n_keys + j0 + j] = scale * q_h . k_(j0 + j) for H heads and J keys.
template <int H, int J>
void score_block(const float* q, const uint16_t* k, int64_t j0, int64_t n_keys, int64_t head_dim,
                 float scale, float* scores) {
    const uint16_t* rows = k + j0 * head_dim;
    float32x4_t acc[H][J];
#pragma GCC unroll 4
    for (int h = 0; h < H; ++h) {
#pragma GCC unroll 4
        for (int j = 0; j < J; ++j) acc[h][j] = vdupq_n_f32(0.0f);
    }
    for (int64_t d = 0; d < head_dim; d += 4) {
        const int64_t len = head_dim - d < 4 ? head_dim - d : 4;
        float32x4_t kv[J];
#pragma GCC unroll 4
        for (int j = 0; j < J; ++j) {
            const uint16_t* p = rows + j * head_dim + d;
            kv[j] = len == 4 ? load4<DType::f16>(p) : load_partial<DType::f16>(p, len);
        }
#pragma GCC unroll 4
        for (int h = 0; h < H; ++h) {
            const float* qh = q + h * head_dim + d;
            const float32x4_t qv = len == 4 ? vld1q_f32(qh) : load_partial<DType::f32>(qh, len);
#pragma GCC unroll 4
            for (int j = 0; j < J; ++j) acc[h][j] = vfmaq_f32(acc[h][j], qv, kv[j]);
        }
    }
#pragma GCC unroll 4
    for (int h = 0; h < H; ++h) {
#pragma GCC unroll 4
        for (int j = 0; j < J; ++j) scores[h * n_keys + j0 + j] = vaddvq_f32(acc[h][j]) * scale;
    }
}

// out_h[d0 .. d0 + 4V) = inv_sum_h * sum_j p_hj v_j[d0 ..] for H heads, the
// accumulators in registers across all keys. `len` < 4 marks a partial vector.
template <int H, int V>
void value_block(const float* p, int64_t n_keys, const uint16_t* v, int64_t head_dim, int64_t d0,
                 int64_t len, const float* inv_sum, float* out) {
    float32x4_t acc[H][V];
#pragma GCC unroll 4
    for (int h = 0; h < H; ++h) {
#pragma GCC unroll 8
        for (int b = 0; b < V; ++b) acc[h][b] = vdupq_n_f32(0.0f);
    }
    for (int64_t j = 0; j < n_keys; ++j) {
        const uint16_t* row = v + j * head_dim + d0;
        float32x4_t vv[V];
#pragma GCC unroll 8
        for (int b = 0; b < V; ++b) {
            vv[b] = len == 4 ? load4<DType::f16>(row + 4 * b)
                             : load_partial<DType::f16>(row + 4 * b, len);
        }
#pragma GCC unroll 4
        for (int h = 0; h < H; ++h) {
            const float pj = p[h * n_keys + j];
#pragma GCC unroll 8
            for (int b = 0; b < V; ++b) acc[h][b] = vfmaq_n_f32(acc[h][b], vv[b], pj);
        }
    }
#pragma GCC unroll 4
    for (int h = 0; h < H; ++h) {
#pragma GCC unroll 8
        for (int b = 0; b < V; ++b) {
            store_partial(out + h * head_dim + d0 + 4 * b, vmulq_n_f32(acc[h][b], inv_sum[h]), len);
        }
    }
}

// Keys and value vectors per pass chosen to keep about sixteen accumulators.
template <int H>
void attend_heads(const float* q, const uint16_t* k, const uint16_t* v, int64_t n_keys,
                  int64_t head_dim, float scale, float* scores, float* out) {
    constexpr int J = H <= 2 ? 4 : 2;
    int64_t j = 0;
    for (; j + J <= n_keys; j += J) score_block<H, J>(q, k, j, n_keys, head_dim, scale, scores);
    for (; j < n_keys; ++j) score_block<H, 1>(q, k, j, n_keys, head_dim, scale, scores);
    // Unnormalised softmax; the 1 / sum goes into the output scaling.
    float inv_sum[H];
    for (int h = 0; h < H; ++h) inv_sum[h] = 1.0f / exp_sum(scores + h * n_keys, n_keys);
    constexpr int V = H <= 2 ? 8 : 4;
    int64_t d = 0;
    for (; d + 4 * V <= head_dim; d += 4 * V) {
        value_block<H, V>(scores, n_keys, v, head_dim, d, 4, inv_sum, out);
    }
    for (; d < head_dim; d += 4) {
        const int64_t len = head_dim - d < 4 ? head_dim - d : 4;
        value_block<H, 1>(scores, n_keys, v, head_dim, d, len, inv_sum, out);
    }
}

}  // namespace

void attend(const float* q, int64_t n_q, const uint16_t* k, const uint16_t* v, int64_t n_keys,
            int64_t head_dim, float scale, float* scores, float* out) {
    for (int64_t h = 0; h < n_q; h += max_heads) {
        const float* qh = q + h * head_dim;
        float* sh = scores + h * n_keys;
        float* oh = out + h * head_dim;
        switch (n_q - h < max_heads ? n_q - h : max_heads) {
            case 1:
                attend_heads<1>(qh, k, v, n_keys, head_dim, scale, sh, oh);
                break;
            case 2:
                attend_heads<2>(qh, k, v, n_keys, head_dim, scale, sh, oh);
                break;
            case 3:
                attend_heads<3>(qh, k, v, n_keys, head_dim, scale, sh, oh);
                break;
            default:
                attend_heads<4>(qh, k, v, n_keys, head_dim, scale, sh, oh);
                break;
        }
    }
}

}  // namespace anelm::kernels::neon
