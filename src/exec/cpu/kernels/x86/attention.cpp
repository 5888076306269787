// AVX2 attention leaf: the query heads of one kv head against its f16 key
// rows, softmax, and the probability-weighted sum of its f16 value rows. Up to
// four heads go together so each key and value vector is converted once for all.
#include "exec/cpu/kernels/x86/avx2.h"

namespace anelm::kernels::avx2 {

namespace {

constexpr int max_heads = 4;

// scores[h * n_keys + j0 + j] = scale * q_h . k_(j0 + j) for H heads and J keys.
template <int H, int J>
void score_block(const float* q, const uint16_t* k, int64_t j0, int64_t n_keys, int64_t head_dim,
                 float scale, float* scores) {
    const uint16_t* rows = k + j0 * head_dim;
    __m256 acc[H][J];
#pragma GCC unroll 4
    for (int h = 0; h < H; ++h) {
#pragma GCC unroll 4
        for (int j = 0; j < J; ++j) acc[h][j] = _mm256_setzero_ps();
    }
    for (int64_t d = 0; d < head_dim; d += 8) {
        const int64_t len = head_dim - d < 8 ? head_dim - d : 8;
        __m256 kv[J];
#pragma GCC unroll 4
        for (int j = 0; j < J; ++j) {
            const uint16_t* p = rows + j * head_dim + d;
            kv[j] = len == 8 ? load8<DType::f16>(p) : load_partial<DType::f16>(p, len);
        }
#pragma GCC unroll 4
        for (int h = 0; h < H; ++h) {
            const float* qh = q + h * head_dim + d;
            const __m256 qv = len == 8 ? _mm256_loadu_ps(qh) : load_partial<DType::f32>(qh, len);
#pragma GCC unroll 4
            for (int j = 0; j < J; ++j) acc[h][j] = _mm256_fmadd_ps(qv, kv[j], acc[h][j]);
        }
    }
#pragma GCC unroll 4
    for (int h = 0; h < H; ++h) {
#pragma GCC unroll 4
        for (int j = 0; j < J; ++j) scores[h * n_keys + j0 + j] = hsum(acc[h][j]) * scale;
    }
}

// out_h[d0 .. d0 + 8V) = inv_sum_h * sum_j p_hj v_j[d0 ..] for H heads, the
// accumulators in registers across all keys. `len` < 8 marks a partial vector.
template <int H, int V>
void value_block(const float* p, int64_t n_keys, const uint16_t* v, int64_t head_dim, int64_t d0,
                 int64_t len, const float* inv_sum, float* out) {
    __m256 acc[H][V];
#pragma GCC unroll 4
    for (int h = 0; h < H; ++h) {
#pragma GCC unroll 4
        for (int b = 0; b < V; ++b) acc[h][b] = _mm256_setzero_ps();
    }
    for (int64_t j = 0; j < n_keys; ++j) {
        const uint16_t* row = v + j * head_dim + d0;
        __m256 vv[V];
#pragma GCC unroll 4
        for (int b = 0; b < V; ++b) {
            vv[b] = len == 8 ? load8<DType::f16>(row + 8 * b)
                             : load_partial<DType::f16>(row + 8 * b, len);
        }
#pragma GCC unroll 4
        for (int h = 0; h < H; ++h) {
            const __m256 pj = _mm256_broadcast_ss(p + h * n_keys + j);
#pragma GCC unroll 4
            for (int b = 0; b < V; ++b) acc[h][b] = _mm256_fmadd_ps(pj, vv[b], acc[h][b]);
        }
    }
#pragma GCC unroll 4
    for (int h = 0; h < H; ++h) {
        const __m256 inv = _mm256_set1_ps(inv_sum[h]);
#pragma GCC unroll 4
        for (int b = 0; b < V; ++b) {
            store_partial(out + h * head_dim + d0 + 8 * b, _mm256_mul_ps(acc[h][b], inv), len);
        }
    }
}

// Keys and value vectors per pass chosen to keep about eight accumulators.
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
    constexpr int V = H <= 2 ? 4 : 2;
    int64_t d = 0;
    for (; d + 8 * V <= head_dim; d += 8 * V) {
        value_block<H, V>(scores, n_keys, v, head_dim, d, 8, inv_sum, out);
    }
    for (; d < head_dim; d += 8) {
        const int64_t len = head_dim - d < 8 ? head_dim - d : 8;
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

}  // namespace anelm::kernels::avx2
