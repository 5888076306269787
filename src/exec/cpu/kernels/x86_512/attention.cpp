// AVX-512 attention leaf: vec_attention.h over the AVX-512 vector layer.

// GCC 12's AVX-512 headers start some intrinsics from a self-initialised
// "undefined" vector, which its uninitialised-use warnings flag once inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "exec/cpu/kernels/vec_attention.h"
#include "exec/cpu/kernels/x86_512/avx512.h"

namespace anelm::kernels::avx512 {

void attend(const float* q, int64_t n_q, const uint16_t* k, const uint16_t* v, int64_t n_keys,
            int64_t head_dim, float scale, float* scores, float* out) {
    VecAttention<Vec>::attend(q, n_q, k, v, n_keys, head_dim, scale, scores, out);
}

}  // namespace anelm::kernels::avx512
