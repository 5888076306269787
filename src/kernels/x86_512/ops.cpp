// AVX-512 row kernels: normalisation, softmax, SiLU, GELU (vec_ops.h) and the
// delta rule's step (delta_rule_step.h) over the AVX-512 vector layer. Rotary
// embedding and the f16 conversions are AVX2's (x86_512/isa.cpp).

// GCC 12's AVX-512 headers start some intrinsics from a self-initialised
// "undefined" vector, which its uninitialised-use warnings flag once inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/delta_rule_step.h"
#include "kernels/vec_ops.h"
#include "kernels/x86_512/avx512.h"

namespace anelm::kernels::avx512 {

void rms_norm(const float* x, const float* gain, float gain_offset, int64_t n, float eps,
              float* y) {
    VecOps<Vec>::rms_norm(x, gain, gain_offset, n, eps, y);
}

float softmax(float* x, int64_t n) {
    return VecOps<Vec>::softmax(x, n);
}

float exp_sum(float* x, int64_t n, float* max) {
    return VecOps<Vec>::exp_sum(x, n, max);
}

void sigmoid(const float* x, int64_t n, float* y) {
    VecOps<Vec>::sigmoid(x, n, y);
}

void delta_rule_step(float* s, int64_t dk, int64_t dv, const float* q, const float* k,
                     const float* v, float beta, float decay, float* delta, float* o) {
    delta_rule_step_with<Vec>(s, dk, dv, q, k, v, beta, decay, delta, o);
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
    VecOps<Vec>::silu_mul(gate, up, n, out);
}

void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out) {
    VecOps<Vec>::gelu_tanh_mul(gate, up, n, out);
}

}  // namespace anelm::kernels::avx512
