// AVX2 attention leaf: scores of one query against f16 key rows, softmax, and
// the probability-weighted sum of f16 value rows.
#include "exec/cpu/kernels/x86/avx2.h"

namespace anelm::kernels::avx2 {

namespace {

// scores[j] = scale * q . k_j for four keys at a time, sharing each q load.
void scores_of(const float* q, const uint16_t* k, int64_t n_keys, int64_t head_dim, float scale,
               float* scores) {
    const int64_t full = head_dim / 8 * 8, rest = head_dim - full;
    const __m256 q_rest = load_partial<DType::f32>(q + full, rest);
    int64_t j = 0;
    for (; j + 4 <= n_keys; j += 4) {
        const uint16_t* rows = k + j * head_dim;
        __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                         _mm256_setzero_ps()};
        for (int64_t d = 0; d < full; d += 8) {
            const __m256 qv = _mm256_loadu_ps(q + d);
            for (int r = 0; r < 4; ++r) {
                acc[r] = _mm256_fmadd_ps(qv, load8<DType::f16>(rows + r * head_dim + d), acc[r]);
            }
        }
        if (rest) {
            for (int r = 0; r < 4; ++r) {
                const __m256 kv = load_partial<DType::f16>(rows + r * head_dim + full, rest);
                acc[r] = _mm256_fmadd_ps(q_rest, kv, acc[r]);
            }
        }
        _mm_storeu_ps(scores + j, _mm_mul_ps(hsum4(acc[0], acc[1], acc[2], acc[3]),
                                             _mm_set1_ps(scale)));
    }
    for (; j < n_keys; ++j) {
        const uint16_t* row = k + j * head_dim;
        __m256 acc = _mm256_setzero_ps();
        for (int64_t d = 0; d < full; d += 8) {
            acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), load8<DType::f16>(row + d), acc);
        }
        if (rest) acc = _mm256_fmadd_ps(q_rest, load_partial<DType::f16>(row + full, rest), acc);
        scores[j] = hsum(acc) * scale;
    }
}

// out[d0 .. d0 + 8V) = inv_sum * sum_j p_j v_j[d0 ..], the accumulators held in
// registers across all keys. `len` < 8 marks a partial last vector.
template <int V>
void weighted_sum(const float* p, const uint16_t* v, int64_t n_keys, int64_t head_dim, int64_t d0,
                  int64_t len, float inv_sum, float* out) {
    __m256 acc[V];
    for (int b = 0; b < V; ++b) acc[b] = _mm256_setzero_ps();
    for (int64_t j = 0; j < n_keys; ++j) {
        const __m256 pj = _mm256_broadcast_ss(p + j);
        const uint16_t* row = v + j * head_dim + d0;
        for (int b = 0; b < V; ++b) {
            const __m256 vv = len == 8 ? load8<DType::f16>(row + 8 * b)
                                       : load_partial<DType::f16>(row + 8 * b, len);
            acc[b] = _mm256_fmadd_ps(pj, vv, acc[b]);
        }
    }
    const __m256 inv = _mm256_set1_ps(inv_sum);
    for (int b = 0; b < V; ++b) store_partial(out + d0 + 8 * b, _mm256_mul_ps(acc[b], inv), len);
}

}  // namespace

void attend(const float* q, const uint16_t* k, const uint16_t* v, int64_t n_keys,
            int64_t head_dim, float scale, float* scores, float* out) {
    scores_of(q, k, n_keys, head_dim, scale, scores);
    // Unnormalised softmax; the 1 / sum goes into the output scaling.
    __m256 vmax = _mm256_set1_ps(-__builtin_inff());
    int64_t j = 0;
    for (; j + 8 <= n_keys; j += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(scores + j));
    float max = hmax(vmax);
    for (; j < n_keys; ++j) max = scores[j] > max ? scores[j] : max;
    const __m256 vm = _mm256_set1_ps(max);
    __m256 vsum = _mm256_setzero_ps();
    for (j = 0; j + 8 <= n_keys; j += 8) {
        const __m256 e = vexp(_mm256_sub_ps(_mm256_loadu_ps(scores + j), vm));
        _mm256_storeu_ps(scores + j, e);
        vsum = _mm256_add_ps(vsum, e);
    }
    float sum = hsum(vsum);
    for (; j < n_keys; ++j) {
        alignas(32) float e[8];
        _mm256_store_ps(e, vexp(_mm256_set1_ps(scores[j] - max)));
        scores[j] = e[0];
        sum += e[0];
    }
    const float inv_sum = 1.0f / sum;
    int64_t d = 0;
    for (; d + 32 <= head_dim; d += 32) weighted_sum<4>(scores, v, n_keys, head_dim, d, 8, inv_sum, out);
    for (; d + 8 <= head_dim; d += 8) weighted_sum<1>(scores, v, n_keys, head_dim, d, 8, inv_sum, out);
    if (d < head_dim) weighted_sum<1>(scores, v, n_keys, head_dim, d, head_dim - d, inv_sum, out);
}

}  // namespace anelm::kernels::avx2
