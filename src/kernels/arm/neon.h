// Helpers and leaf declarations shared by the NEON files (arm64, where NEON
// and half-precision conversions are baseline).
#pragma once

#include <arm_neon.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/isa.h"

namespace anelm::kernels::neon {

// Storage of a weight dtype: f32 as float, f16 and bf16 as their bits.
template <DType D>
using Elem = std::conditional_t<D == DType::f32, float, uint16_t>;

// Four consecutive values as f32.
template <DType D>
inline float32x4_t load4(const Elem<D>* p) {
    if constexpr (D == DType::f32) {
        return vld1q_f32(p);
    } else if constexpr (D == DType::f16) {
        return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
    } else {
        return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
    }
}

// Eight consecutive values as two f32 vectors.
template <DType D>
inline void load8(const Elem<D>* p, float32x4_t& lo, float32x4_t& hi) {
    if constexpr (D == DType::f32) {
        lo = vld1q_f32(p);
        hi = vld1q_f32(p + 4);
    } else {
        const uint16x8_t u = vld1q_u16(p);
        if constexpr (D == DType::f16) {
            lo = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(u)));
            hi = vcvt_high_f32_f16(vreinterpretq_f16_u16(u));
        } else {
            lo = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(u), 16));
            hi = vreinterpretq_f32_u32(vshll_high_n_u16(u, 16));
        }
    }
}

// The first n (0 <= n <= 4) values as f32, zeros after: nothing past p + n is read.
template <DType D>
inline float32x4_t load_partial(const Elem<D>* p, int64_t n) {
    alignas(16) Elem<D> buffer[4] = {};
    std::memcpy(buffer, p, static_cast<size_t>(n) * sizeof(Elem<D>));
    return load4<D>(buffer);
}

// Stores the first n (0 <= n <= 4) lanes of v.
inline void store_partial(float* p, float32x4_t v, int64_t n) {
    alignas(16) float buffer[4];
    vst1q_f32(buffer, v);
    std::memcpy(p, buffer, static_cast<size_t>(n) * sizeof(float));
}

// The horizontal sums of four vectors, in order.
inline float32x4_t hsum4(float32x4_t a, float32x4_t b, float32x4_t c, float32x4_t d) {
    return vpaddq_f32(vpaddq_f32(a, b), vpaddq_f32(c, d));
}

// e^x to about 1 ulp: x = n ln2 + r with |r| <= ln2 / 2, a degree-7 polynomial
// for e^r, 2^n through the exponent bits. Overflow gives inf, underflow 0, NaN stays NaN.
inline float32x4_t vexp(float32x4_t x) {
    const uint32x4_t overflow = vcgtq_f32(x, vdupq_n_f32(88.72283935546875f));
    const uint32x4_t underflow = vcltq_f32(x, vdupq_n_f32(-87.33654022216797f));
    // NEON max/min return NaN when either operand is NaN.
    x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.33654022216797f)), vdupq_n_f32(88.3762626647949f));
    const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
    r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
    float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
    p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
    p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
    p = vaddq_f32(vfmaq_f32(r, p, vmulq_f32(r, r)), vdupq_n_f32(1.0f));
    const int32x4_t bits = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
    const float32x4_t y = vmulq_f32(p, vreinterpretq_f32_s32(bits));
    return vbslq_f32(overflow, vdupq_n_f32(__builtin_inff()),
                     vbslq_f32(underflow, vdupq_n_f32(0.0f), y));
}

// x[i] = exp(x[i] - max(x)) over n > 0 values; returns their sum.
float exp_sum(float* x, int64_t n, float* max);

// The vector layer the portable blockings (vec_matmul.h, vec_attention.h)
// are written over: four f32 lanes.
struct Vec {
    using V = float32x4_t;
    static constexpr int lanes = 4;

    static V zero() { return vdupq_n_f32(0.0f); }
    static V set1(float a) { return vdupq_n_f32(a); }
    template <DType D>
    static V load(const Elem<D>* p) {
        return load4<D>(p);
    }
    template <DType D>
    static V load_first(const Elem<D>* p, int64_t n) {
        return load_partial<D>(p, n);
    }
    // Four int8 values as f32 (an int8 KV cache's rows).
    static V load_i8(const int8_t* p) { return load_first_i8(p, 4); }
    static V load_first_i8(const int8_t* p, int64_t n) {
        int32_t bits = 0;
        std::memcpy(&bits, p, static_cast<size_t>(n));
        const int16x8_t wide = vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(bits)));
        return vcvtq_f32_s32(vmovl_s16(vget_low_s16(wide)));
    }
    static V load_aligned(const float* p) { return vld1q_f32(p); }
    static void store(float* p, V v) { vst1q_f32(p, v); }
    static void store_aligned(float* p, V v) { vst1q_f32(p, v); }
    static void store_first(float* p, V v, int64_t n) { store_partial(p, v, n); }
    static V fma(V a, V b, V c) { return vfmaq_f32(c, a, b); }
    static V add(V a, V b) { return vaddq_f32(a, b); }
    static V sub(V a, V b) { return vsubq_f32(a, b); }
    static V mul(V a, V b) { return vmulq_f32(a, b); }
    static V div(V a, V b) { return vdivq_f32(a, b); }
    // NaN in either passes through.
    static V max(V a, V b) { return vmaxq_f32(a, b); }
    static V exp(V x) { return vexp(x); }
    static float sum(V v) { return vaddvq_f32(v); }
    static float max_lane(V v) { return vmaxvq_f32(v); }
    // out[0..4) = the sums of a, b, c and d.
    static void store_sums4(float* out, V a, V b, V c, V d) {
        vst1q_f32(out, vpaddq_f32(vpaddq_f32(a, b), vpaddq_f32(c, d)));
    }
    // In place: rows r[0..4) become columns.
    static void transpose(V r[lanes]) {
        const float32x4x2_t t01 = vtrnq_f32(r[0], r[1]);
        const float32x4x2_t t23 = vtrnq_f32(r[2], r[3]);
        r[0] = vcombine_f32(vget_low_f32(t01.val[0]), vget_low_f32(t23.val[0]));
        r[1] = vcombine_f32(vget_low_f32(t01.val[1]), vget_low_f32(t23.val[1]));
        r[2] = vcombine_f32(vget_high_f32(t01.val[0]), vget_high_f32(t23.val[0]));
        r[3] = vcombine_f32(vget_high_f32(t01.val[1]), vget_high_f32(t23.val[1]));
    }
    static void prefetch(const void* p) { __builtin_prefetch(p); }
    // The tokens of one input step of a GEMM tile as lanes of two registers
    // (tokens 0-3 and 4-7), not one broadcast register each (vec_matmul.h
    // broadcasts from memory where a layer has no Tokens).
    struct Tokens {
        float32x4_t lo, hi;
    };
    // Reads 8 values when count > 4 (the packed steps hold mr = 8).
    static Tokens load_tokens(const float* p, int count) {
        const float32x4_t lo = vld1q_f32(p);
        return {lo, count > 4 ? vld1q_f32(p + 4) : lo};
    }
    // acc + b * (token m of a).
    template <int m>
    static V fma_token(V acc, V b, const Tokens& a) {
        return vfmaq_laneq_f32(acc, b, m < 4 ? a.lo : a.hi, m % 4);
    }
    static float exp_sum(float* x, int64_t n, float* max) { return neon::exp_sum(x, n, max); }
};

// Leaves, in matmul.cpp, ops.cpp and attention.cpp.
void pack_panel(const Matrix& w, int64_t o0, int64_t n_rows, int64_t k0, int64_t kc, float* panel);
void gemm_tile(const float* xp, int64_t m, const float* panel, int64_t kc, float* y, int64_t ldy,
               int64_t n, bool accumulate);
void gemv(const Matrix& w, const float* x, int64_t n_tokens, int64_t o0, int64_t o1, float* y,
          int64_t ldy);
void attend(const float* q, int64_t n_q, const uint16_t* k, const uint16_t* v, int64_t n_keys,
            int64_t head_dim, float scale, float* scores, float* out, float* lse);
void attend_q8(const float* q, int64_t n_q, KvRows k, KvRows v, int64_t n_keys, int64_t head_dim,
               float scale, float* scores, float* out, float* lse);
void rms_norm(const float* x, const float* gain, float gain_offset, int64_t n, float eps, float* y);
float softmax(float* x, int64_t n);
void weighted_rows(const float* a, int64_t n_sets, int64_t lda, const float* rows, int64_t n_rows,
                   int64_t width, float* out);
void sigmoid(const float* x, int64_t n, float* y);
void silu_mul(const float* gate, const float* up, int64_t n, float* out);
void delta_rule_step(float* s, int64_t dk, int64_t dv, const float* q, const float* k,
                     const float* v, float beta, float decay, float* delta, float* o);
void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out);
void rope(float* x, int64_t n_heads, int64_t head_dim, const float* cos, const float* sin,
          bool interleaved);
void f32_to_f16_row(const float* x, int64_t n, uint16_t* y);
void f16_to_f32_row(const uint16_t* x, int64_t n, float* y);
void round_to_f16_row(float* x, int64_t n);

// Tile shape of gemm_tile (32 registers: 24 accumulators) and tokens per gemv pass.
constexpr int mr = 8;
constexpr int nr = 12;
constexpr int gemv_tokens = 4;

}  // namespace anelm::kernels::neon
