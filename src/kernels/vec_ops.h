// The row kernels of isa.h that are the same loops on every instruction set
// (rms_norm, softmax and its exp_sum, sigmoid, silu_mul, gelu_tanh_mul), written once
// over an instruction set's vector layer F (see vec_matmul.h). Rotary
// embedding and the f16 conversions use instructions particular to each set
// and stay in their ops.cpp.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/isa.h"

namespace anelm::kernels {

template <class F>
struct VecOps {
    using V = typename F::V;
    static constexpr int L = F::lanes;

    static V load(const float* p) { return F::template load<DType::f32>(p); }
    static V load_first(const float* p, int64_t n) {
        return F::template load_first<DType::f32>(p, n);
    }

    static void rms_norm(const float* x, const float* gain, float gain_offset, int64_t n, float eps,
                         float* y) {
        V acc[4] = {F::zero(), F::zero(), F::zero(), F::zero()};
        int64_t i = 0;
        for (; i + 4 * L <= n; i += 4 * L) {
            for (int j = 0; j < 4; ++j) {
                const V v = load(x + i + L * j);
                acc[j] = F::fma(v, v, acc[j]);
            }
        }
        for (; i < n; i += L) {
            const V v = load_first(x + i, n - i < L ? n - i : L);
            acc[0] = F::fma(v, v, acc[0]);
        }
        const float sum_sq = F::sum(F::add(F::add(acc[0], acc[1]), F::add(acc[2], acc[3])));
        const float scale = 1.0f / __builtin_sqrtf(sum_sq / static_cast<float>(n) + eps);
        const V vscale = F::set1(scale), offset = F::set1(gain_offset);
        for (i = 0; i + L <= n; i += L) {
            V v = F::mul(load(x + i), vscale);
            if (gain) v = F::mul(v, F::add(offset, load(gain + i)));
            F::store(y + i, v);
        }
        for (; i < n; ++i) y[i] = gain ? x[i] * scale * (gain_offset + gain[i]) : x[i] * scale;
    }

    // x[i] = exp(x[i] - max(x)) over n > 0 values; returns their sum, and
    // max(x) in a non-null max_out.
    static float exp_sum(float* x, int64_t n, float* max_out = nullptr) {
        V vmax = F::set1(-__builtin_inff());
        int64_t i = 0;
        for (; i + L <= n; i += L) vmax = F::max(vmax, load(x + i));
        float max = F::max_lane(vmax);
        for (; i < n; ++i) max = x[i] > max ? x[i] : max;
        if (max_out) *max_out = max;
        const V vm = F::set1(max);
        V vsum = F::zero();
        for (i = 0; i + L <= n; i += L) {
            const V e = F::exp(F::sub(load(x + i), vm));
            F::store(x + i, e);
            vsum = F::add(vsum, e);
        }
        float sum = F::sum(vsum);
        if (i < n) {
            // Only the row's lanes are stored and summed: past it they hold exp(-max).
            F::store_first(x + i, F::exp(F::sub(load_first(x + i, n - i), vm)), n - i);
            for (; i < n; ++i) sum += x[i];
        }
        return sum;
    }

    // Returns the input's log-sum-exp (-inf for none).
    static float softmax(float* x, int64_t n) {
        if (n <= 0) return -__builtin_inff();
        float max;
        const float sum = exp_sum(x, n, &max);
        const float inv = 1.0f / sum;
        const V vinv = F::set1(inv);
        int64_t i = 0;
        for (; i + L <= n; i += L) F::store(x + i, F::mul(load(x + i), vinv));
        for (; i < n; ++i) x[i] *= inv;
        return max + std::log(sum);
    }

    // out[i] = f(gate[i], up[i]) a vector at a time; only a short tail goes
    // through the partial loads.
    template <class G>
    static void gated(const float* gate, const float* up, int64_t n, float* out, G f) {
        int64_t i = 0;
        for (; i + L <= n; i += L) F::store(out + i, f(load(gate + i), load(up + i)));
        if (i < n)
            F::store_first(out + i, f(load_first(gate + i, n - i), load_first(up + i, n - i)),
                           n - i);
    }

    static void sigmoid(const float* x, int64_t n, float* y) {
        const V one = F::set1(1.0f);
        const auto f = [&](V v) { return F::div(one, F::add(one, F::exp(F::sub(F::zero(), v)))); };
        int64_t i = 0;
        for (; i + L <= n; i += L) F::store(y + i, f(load(x + i)));
        if (i < n) F::store_first(y + i, f(load_first(x + i, n - i)), n - i);
    }

    static void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
        const V one = F::set1(1.0f);
        gated(gate, up, n, out, [&](V g, V u) {
            return F::mul(F::div(g, F::add(one, F::exp(F::sub(F::zero(), g)))), u);
        });
    }

    // 0.5 g (1 + tanh(u)) = g / (1 + e^(-2u)): one exponential, and saturation
    // to g or 0 at large |u| without a separate tanh.
    static void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out) {
        const V one = F::set1(1.0f);
        const V k2 = F::set1(-2.0f * 0.7978845608028654f);
        const V c = F::set1(0.044715f);
        gated(gate, up, n, out, [&](V g, V u) {
            const V inner = F::fma(F::mul(c, g), F::mul(g, g), g);
            return F::mul(F::div(g, F::add(one, F::exp(F::mul(k2, inner)))), u);
        });
    }
};

}  // namespace anelm::kernels
