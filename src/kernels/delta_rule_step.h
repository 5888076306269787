// The delta rule's step written once over an instruction set's vector layer F
// (see vec_matmul.h), for the leaf files of each instruction set to
// instantiate with their own (x86/ops.cpp, arm/ops.cpp). Include it only from
// a file compiled for that instruction set.
#pragma once

#include <cstdint>

#include "kernels/isa.h"

namespace anelm::kernels {

// Columns [j, j + lanes C) of the step, or [j, j + len) for a partial C = 1
// tail: C independent registers per row keep the FMA chains apart. The first
// pass decays the rows and gathers s^T k, the second writes k delta^T and
// gathers s^T q.
template <class F, int C, bool Partial>
void delta_columns(float* s, int64_t dk, int64_t dv, int64_t j, int64_t len, const float* q,
                   const float* k, const float* v, float beta, float decay, float* delta,
                   float* o) {
    using V = typename F::V;
    constexpr int64_t w = F::lanes;
    auto load = [&](const float* p) {
        return Partial ? F::template load_first<DType::f32>(p, len)
                       : F::template load<DType::f32>(p);
    };
    auto store = [&](float* p, V x) {
        if (Partial)
            F::store_first(p, x, len);
        else
            F::store(p, x);
    };
    const V vdecay = F::set1(decay);
    V acc[C], d[C];
    for (int c = 0; c < C; ++c) acc[c] = F::zero();
    for (int64_t i = 0; i < dk; ++i) {
        const V ki = F::set1(k[i]);
        for (int c = 0; c < C; ++c) {
            float* p = s + i * dv + j + w * c;
            const V decayed = F::mul(load(p), vdecay);
            store(p, decayed);
            acc[c] = F::fma(decayed, ki, acc[c]);
        }
    }
    for (int c = 0; c < C; ++c) {
        d[c] = F::mul(F::set1(beta), F::sub(load(v + j + w * c), acc[c]));
        store(delta + j + w * c, d[c]);
        acc[c] = F::zero();
    }
    for (int64_t i = 0; i < dk; ++i) {
        const V ki = F::set1(k[i]), qi = F::set1(q[i]);
        for (int c = 0; c < C; ++c) {
            float* p = s + i * dv + j + w * c;
            const V written = F::fma(ki, d[c], load(p));
            store(p, written);
            acc[c] = F::fma(written, qi, acc[c]);
        }
    }
    for (int c = 0; c < C; ++c) store(o + j + w * c, acc[c]);
}

// kernels.h's delta_rule_step: four registers of columns at a time, then one,
// then the masked tail.
template <class F>
void delta_rule_step_with(float* s, int64_t dk, int64_t dv, const float* q, const float* k,
                          const float* v, float beta, float decay, float* delta, float* o) {
    constexpr int64_t w = F::lanes;
    int64_t j = 0;
    for (; j + 4 * w <= dv; j += 4 * w)
        delta_columns<F, 4, false>(s, dk, dv, j, 4 * w, q, k, v, beta, decay, delta, o);
    for (; j + w <= dv; j += w)
        delta_columns<F, 1, false>(s, dk, dv, j, w, q, k, v, beta, decay, delta, o);
    if (j < dv) delta_columns<F, 1, true>(s, dk, dv, j, dv - j, q, k, v, beta, decay, delta, o);
}

}  // namespace anelm::kernels
