// The AVX-512 attention leaf over int8 values (attend_q8): vec_attention.h over
// the AVX-512 vector layer, whose sixteen lanes widen sixteen int8 values in one
// instruction. Attention over f16 rows stays AVX2's (isa.cpp).
#include "kernels/vec_attention.h"
#include "kernels/x86_512/avx512.h"

namespace anelm::kernels::avx512 {

void attend_q8(const float* q, int64_t n_q, KvRows k, KvRows v, int64_t n_keys, int64_t head_dim,
               float scale, float* scores, float* out, float* lse) {
    VecAttention<Vec>::attend_q8(q, n_q, k, v, n_keys, head_dim, scale, scores, out, lse);
}

}  // namespace anelm::kernels::avx512
