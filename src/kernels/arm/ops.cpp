// NEON row kernels: normalisation, softmax, SiLU, GELU (vec_ops.h) and the
// delta rule's step (delta_rule_step.h) over the NEON vector layer; rotary
// embedding and the half conversions (round to nearest even under the default
// FPCR, as base/half.h).
#include "kernels/arm/neon.h"
#include "kernels/delta_rule_step.h"
#include "kernels/vec_ops.h"

namespace anelm::kernels::neon {

namespace {

// The conversion quiets a signalling NaN half; base/half.h keeps the payload
// as it is. Rebuild NaN lanes from the bits.
inline float32x4_t f16_to_f32_exact(uint16x4_t h) {
    const float32x4_t converted = vcvt_f32_f16(vreinterpret_f16_u16(h));
    const uint32x4_t bits = vmovl_u16(h);
    const uint32x4_t nan = vcgtq_u32(vandq_u32(bits, vdupq_n_u32(0x7fff)), vdupq_n_u32(0x7c00));
    const uint32x4_t exact =
        vorrq_u32(vorrq_u32(vshlq_n_u32(vandq_u32(bits, vdupq_n_u32(0x8000)), 16),
                            vshlq_n_u32(vandq_u32(bits, vdupq_n_u32(0x3ff)), 13)),
                  vdupq_n_u32(0x7f800000));
    return vbslq_f32(nan, vreinterpretq_f32_u32(exact), converted);
}

inline uint16x4_t f32_to_f16_bits(float32x4_t v) {
    return vreinterpret_u16_f16(vcvt_f16_f32(v));
}

}  // namespace

void rms_norm(const float* x, const float* gain, float gain_offset, int64_t n, float eps,
              float* y) {
    VecOps<Vec>::rms_norm(x, gain, gain_offset, n, eps, y);
}

float exp_sum(float* x, int64_t n, float* max) {
    return VecOps<Vec>::exp_sum(x, n, max);
}

float softmax(float* x, int64_t n) {
    return VecOps<Vec>::softmax(x, n);
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

void rope(float* x, int64_t n_heads, int64_t head_dim, const float* cos, const float* sin,
          bool interleaved) {
    const int64_t half = head_dim / 2;
    for (int64_t h = 0; h < n_heads; ++h) {
        float* head = x + h * head_dim;
        int64_t i = 0;
        for (; i + 4 <= half; i += 4) {
            const float32x4_t c = vld1q_f32(cos + i), s = vld1q_f32(sin + i);
            // Interleaved pairs load de-interleaved: val[0] the first of each pair.
            float32x4x2_t ab =
                interleaved ? vld2q_f32(head + 2 * i)
                            : float32x4x2_t{{vld1q_f32(head + i), vld1q_f32(head + half + i)}};
            const float32x4_t a = ab.val[0], b = ab.val[1];
            ab.val[0] = vfmsq_f32(vmulq_f32(a, c), b, s);
            ab.val[1] = vfmaq_f32(vmulq_f32(b, c), a, s);
            if (interleaved) {
                vst2q_f32(head + 2 * i, ab);
            } else {
                vst1q_f32(head + i, ab.val[0]);
                vst1q_f32(head + half + i, ab.val[1]);
            }
        }
        for (; i < half; ++i) {
            float& a = interleaved ? head[2 * i] : head[i];
            float& b = interleaved ? head[2 * i + 1] : head[i + half];
            const float a0 = a, b0 = b;
            a = a0 * cos[i] - b0 * sin[i];
            b = a0 * sin[i] + b0 * cos[i];
        }
    }
}

void f32_to_f16_row(const float* x, int64_t n, uint16_t* y) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1_u16(y + i, f32_to_f16_bits(vld1q_f32(x + i)));
    if (i < n) {
        alignas(8) uint16_t buffer[4];
        vst1_u16(buffer, f32_to_f16_bits(load_partial<DType::f32>(x + i, n - i)));
        std::memcpy(y + i, buffer, static_cast<size_t>(n - i) * sizeof(uint16_t));
    }
}

void f16_to_f32_row(const uint16_t* x, int64_t n, float* y) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, f16_to_f32_exact(vld1_u16(x + i)));
    if (i < n) {
        alignas(8) uint16_t buffer[4] = {};
        std::memcpy(buffer, x + i, static_cast<size_t>(n - i) * sizeof(uint16_t));
        store_partial(y + i, f16_to_f32_exact(vld1_u16(buffer)), n - i);
    }
}

void round_to_f16_row(float* x, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(x + i, f16_to_f32_exact(f32_to_f16_bits(vld1q_f32(x + i))));
    if (i < n) {
        const uint16x4_t h = f32_to_f16_bits(load_partial<DType::f32>(x + i, n - i));
        store_partial(x + i, f16_to_f32_exact(h), n - i);
    }
}

}  // namespace anelm::kernels::neon
