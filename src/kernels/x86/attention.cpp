// AVX2 attention leaves (attend, attend_q8, weighted_rows): vec_attention.h over the AVX2 vector
// layer.
#include "kernels/vec_attention.h"
#include "kernels/x86/avx2.h"

namespace anelm::kernels::avx2 {

void attend(const float* q, int64_t n_q, const uint16_t* k, const uint16_t* v, int64_t n_keys,
            int64_t head_dim, float scale, float* scores, float* out, float* lse) {
    VecAttention<Vec>::attend(q, n_q, k, v, n_keys, head_dim, scale, scores, out, lse);
}

void attend_q8(const float* q, int64_t n_q, KvRows k, KvRows v, int64_t n_keys, int64_t head_dim,
               float scale, float* scores, float* out, float* lse) {
    VecAttention<Vec>::attend_q8(q, n_q, k, v, n_keys, head_dim, scale, scores, out, lse);
}

void weighted_rows(const float* a, int64_t n_sets, int64_t lda, const float* rows, int64_t n_rows,
                   int64_t width, float* out) {
    VecAttention<Vec>::weighted_rows(a, n_sets, lda, rows, n_rows, width, out);
}

}  // namespace anelm::kernels::avx2
