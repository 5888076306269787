// NEON attention leaf: scores of one query against f16 key rows, softmax, and
// the probability-weighted sum of f16 value rows.
#include "exec/cpu/kernels/arm/neon.h"

namespace anelm::kernels::neon {

namespace {

// scores[j] = scale * q . k_j for four keys at a time, sharing each q load.
void scores_of(const float* q, const uint16_t* k, int64_t n_keys, int64_t head_dim, float scale,
               float* scores) {
    const int64_t full = head_dim / 4 * 4, rest = head_dim - full;
    const float32x4_t q_rest = load_partial<DType::f32>(q + full, rest);
    int64_t j = 0;
    for (; j + 4 <= n_keys; j += 4) {
        const uint16_t* rows = k + j * head_dim;
        float32x4_t acc[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f),
                              vdupq_n_f32(0.0f)};
        for (int64_t d = 0; d < full; d += 4) {
            const float32x4_t qv = vld1q_f32(q + d);
            for (int r = 0; r < 4; ++r) {
                acc[r] = vfmaq_f32(acc[r], qv, load4<DType::f16>(rows + r * head_dim + d));
            }
        }
        if (rest) {
            for (int r = 0; r < 4; ++r) {
                const float32x4_t kv = load_partial<DType::f16>(rows + r * head_dim + full, rest);
                acc[r] = vfmaq_f32(acc[r], q_rest, kv);
            }
        }
        vst1q_f32(scores + j, vmulq_f32(hsum4(acc[0], acc[1], acc[2], acc[3]), vdupq_n_f32(scale)));
    }
    for (; j < n_keys; ++j) {
        const uint16_t* row = k + j * head_dim;
        float32x4_t acc = vdupq_n_f32(0.0f);
        for (int64_t d = 0; d < full; d += 4) {
            acc = vfmaq_f32(acc, vld1q_f32(q + d), load4<DType::f16>(row + d));
        }
        if (rest) acc = vfmaq_f32(acc, q_rest, load_partial<DType::f16>(row + full, rest));
        scores[j] = vaddvq_f32(acc) * scale;
    }
}

// out[d0 .. d0 + 4V) = inv_sum * sum_j p_j v_j[d0 ..], the accumulators held in
// registers across all keys. `len` < 4 marks a partial last vector.
template <int V>
void weighted_sum(const float* p, const uint16_t* v, int64_t n_keys, int64_t head_dim, int64_t d0,
                  int64_t len, float inv_sum, float* out) {
    float32x4_t acc[V];
    for (int b = 0; b < V; ++b) acc[b] = vdupq_n_f32(0.0f);
    for (int64_t j = 0; j < n_keys; ++j) {
        const float32x4_t pj = vdupq_n_f32(p[j]);
        const uint16_t* row = v + j * head_dim + d0;
        for (int b = 0; b < V; ++b) {
            const float32x4_t vv = len == 4 ? load4<DType::f16>(row + 4 * b)
                                            : load_partial<DType::f16>(row + 4 * b, len);
            acc[b] = vfmaq_f32(acc[b], pj, vv);
        }
    }
    for (int b = 0; b < V; ++b) store_partial(out + d0 + 4 * b, vmulq_n_f32(acc[b], inv_sum), len);
}

}  // namespace

void attend(const float* q, const uint16_t* k, const uint16_t* v, int64_t n_keys,
            int64_t head_dim, float scale, float* scores, float* out) {
    scores_of(q, k, n_keys, head_dim, scale, scores);
    // Unnormalised softmax; the 1 / sum goes into the output scaling.
    float32x4_t vmax = vdupq_n_f32(-__builtin_inff());
    int64_t j = 0;
    for (; j + 4 <= n_keys; j += 4) vmax = vmaxq_f32(vmax, vld1q_f32(scores + j));
    float max = vmaxvq_f32(vmax);
    for (; j < n_keys; ++j) max = scores[j] > max ? scores[j] : max;
    const float32x4_t vm = vdupq_n_f32(max);
    float32x4_t vsum = vdupq_n_f32(0.0f);
    for (j = 0; j + 4 <= n_keys; j += 4) {
        const float32x4_t e = vexp(vsubq_f32(vld1q_f32(scores + j), vm));
        vst1q_f32(scores + j, e);
        vsum = vaddq_f32(vsum, e);
    }
    float sum = vaddvq_f32(vsum);
    for (; j < n_keys; ++j) {
        scores[j] = vgetq_lane_f32(vexp(vdupq_n_f32(scores[j] - max)), 0);
        sum += scores[j];
    }
    const float inv_sum = 1.0f / sum;
    int64_t d = 0;
    for (; d + 32 <= head_dim; d += 32) weighted_sum<8>(scores, v, n_keys, head_dim, d, 4, inv_sum, out);
    for (; d + 4 <= head_dim; d += 4) weighted_sum<1>(scores, v, n_keys, head_dim, d, 4, inv_sum, out);
    if (d < head_dim) weighted_sum<1>(scores, v, n_keys, head_dim, d, head_dim - d, inv_sum, out);
}

}  // namespace anelm::kernels::neon
