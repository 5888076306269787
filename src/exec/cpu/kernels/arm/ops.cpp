// NEON row kernels: normalisation, softmax, SiLU, GELU, rotary embedding, the
// delta rule's step and the half conversions (round to nearest even under the
// default FPCR, as base/half.h).
#include "exec/cpu/kernels/arm/neon.h"
#include "exec/cpu/kernels/delta_rule_step.h"

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
    float32x4_t acc[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f),
                          vdupq_n_f32(0.0f)};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int j = 0; j < 4; ++j) {
            const float32x4_t v = vld1q_f32(x + i + 4 * j);
            acc[j] = vfmaq_f32(acc[j], v, v);
        }
    }
    for (; i < n; i += 4) {
        const float32x4_t v = load_partial<DType::f32>(x + i, n - i < 4 ? n - i : 4);
        acc[0] = vfmaq_f32(acc[0], v, v);
    }
    const float sum_sq =
        vaddvq_f32(vaddq_f32(vaddq_f32(acc[0], acc[1]), vaddq_f32(acc[2], acc[3])));
    const float scale = 1.0f / __builtin_sqrtf(sum_sq / static_cast<float>(n) + eps);
    const float32x4_t vscale = vdupq_n_f32(scale), offset = vdupq_n_f32(gain_offset);
    for (i = 0; i + 4 <= n; i += 4) {
        float32x4_t v = vmulq_f32(vld1q_f32(x + i), vscale);
        if (gain) v = vmulq_f32(v, vaddq_f32(offset, vld1q_f32(gain + i)));
        vst1q_f32(y + i, v);
    }
    for (; i < n; ++i) y[i] = gain ? x[i] * scale * (gain_offset + gain[i]) : x[i] * scale;
}

float exp_sum(float* x, int64_t n) {
    float32x4_t vmax = vdupq_n_f32(-__builtin_inff());
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vmax = vmaxq_f32(vmax, vld1q_f32(x + i));
    float max = vmaxvq_f32(vmax);
    for (; i < n; ++i) max = x[i] > max ? x[i] : max;
    const float32x4_t vm = vdupq_n_f32(max);
    float32x4_t vsum = vdupq_n_f32(0.0f);
    for (i = 0; i + 4 <= n; i += 4) {
        const float32x4_t e = vexp(vsubq_f32(vld1q_f32(x + i), vm));
        vst1q_f32(x + i, e);
        vsum = vaddq_f32(vsum, e);
    }
    float sum = vaddvq_f32(vsum);
    for (; i < n; ++i) {
        x[i] = vgetq_lane_f32(vexp(vdupq_n_f32(x[i] - max)), 0);
        sum += x[i];
    }
    return sum;
}

void softmax(float* x, int64_t n) {
    if (n <= 0) return;
    const float inv = 1.0f / exp_sum(x, n);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(x + i, vmulq_n_f32(vld1q_f32(x + i), inv));
    for (; i < n; ++i) x[i] *= inv;
}

namespace {

// The vector layer delta_rule_step.h is written over.
struct NeonVec {
    using Reg = float32x4_t;
    static constexpr int64_t lanes = 4;
    static Reg zero() { return vdupq_n_f32(0.0f); }
    static Reg set1(float f) { return vdupq_n_f32(f); }
    static Reg load(const float* p) { return vld1q_f32(p); }
    static void store(float* p, Reg r) { vst1q_f32(p, r); }
    static Reg load_partial(const float* p, int64_t n) {
        return neon::load_partial<DType::f32>(p, n);
    }
    static void store_partial(float* p, Reg r, int64_t n) { neon::store_partial(p, r, n); }
    static Reg mul(Reg a, Reg b) { return vmulq_f32(a, b); }
    static Reg sub(Reg a, Reg b) { return vsubq_f32(a, b); }
    static Reg fmadd(Reg a, Reg b, Reg c) { return vfmaq_f32(c, a, b); }
};

}  // namespace

void delta_rule_step(float* s, int64_t dk, int64_t dv, const float* q, const float* k,
                     const float* v, float beta, float decay, float* delta, float* o) {
    delta_rule_step_with<NeonVec>(s, dk, dv, q, k, v, beta, decay, delta, o);
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
    for (int64_t i = 0; i < n; i += 4) {
        const int64_t len = n - i < 4 ? n - i : 4;
        const float32x4_t g = load_partial<DType::f32>(gate + i, len);
        const float32x4_t u = load_partial<DType::f32>(up + i, len);
        const float32x4_t silu = vdivq_f32(g, vaddq_f32(vdupq_n_f32(1.0f), vexp(vnegq_f32(g))));
        store_partial(out + i, vmulq_f32(silu, u), len);
    }
}

// 0.5 g (1 + tanh(u)) = g / (1 + e^(-2u)): one exponential, and saturation
// to g or 0 at large |u| without a separate tanh.
void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out) {
    const float32x4_t k2 = vdupq_n_f32(-2.0f * 0.7978845608028654f);
    const float32x4_t c = vdupq_n_f32(0.044715f);
    for (int64_t i = 0; i < n; i += 4) {
        const int64_t len = n - i < 4 ? n - i : 4;
        const float32x4_t g = load_partial<DType::f32>(gate + i, len);
        const float32x4_t u = load_partial<DType::f32>(up + i, len);
        const float32x4_t inner = vfmaq_f32(g, vmulq_f32(c, g), vmulq_f32(g, g));
        const float32x4_t gelu =
            vdivq_f32(g, vaddq_f32(vdupq_n_f32(1.0f), vexp(vmulq_f32(k2, inner))));
        store_partial(out + i, vmulq_f32(gelu, u), len);
    }
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
