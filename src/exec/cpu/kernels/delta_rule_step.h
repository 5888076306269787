// The delta rule's step written once over a small vector layer, for the leaf
// files of each instruction set to instantiate with their own (x86/ops.cpp,
// arm/ops.cpp). Include it only from a file compiled for that instruction set.
//
// V provides: a register type `Reg` of `lanes` floats; zero(), set1(f),
// load(p) / store(p, r) of a whole register, load_partial(p, n) /
// store_partial(p, r, n) of its first n lanes, mul(a, b), sub(a, b) and
// fmadd(a, b, c) = a b + c.
#pragma once

#include <cstdint>

namespace anelm::kernels {

// Columns [j, j + lanes C) of the step, or [j, j + len) for a partial C = 1
// tail: C independent registers per row keep the FMA chains apart. The first
// pass decays the rows and gathers s^T k, the second writes k delta^T and
// gathers s^T q.
template <class V, int C, bool Partial>
void delta_columns(float* s, int64_t dk, int64_t dv, int64_t j, int64_t len, const float* q,
                   const float* k, const float* v, float beta, float decay, float* delta,
                   float* o) {
    using Reg = typename V::Reg;
    constexpr int64_t w = V::lanes;
    auto load = [&](const float* p) { return Partial ? V::load_partial(p, len) : V::load(p); };
    auto store = [&](float* p, Reg x) {
        if (Partial)
            V::store_partial(p, x, len);
        else
            V::store(p, x);
    };
    const Reg vdecay = V::set1(decay);
    Reg acc[C], d[C];
    for (int c = 0; c < C; ++c) acc[c] = V::zero();
    for (int64_t i = 0; i < dk; ++i) {
        const Reg ki = V::set1(k[i]);
        for (int c = 0; c < C; ++c) {
            float* p = s + i * dv + j + w * c;
            const Reg decayed = V::mul(load(p), vdecay);
            store(p, decayed);
            acc[c] = V::fmadd(decayed, ki, acc[c]);
        }
    }
    for (int c = 0; c < C; ++c) {
        d[c] = V::mul(V::set1(beta), V::sub(load(v + j + w * c), acc[c]));
        store(delta + j + w * c, d[c]);
        acc[c] = V::zero();
    }
    for (int64_t i = 0; i < dk; ++i) {
        const Reg ki = V::set1(k[i]), qi = V::set1(q[i]);
        for (int c = 0; c < C; ++c) {
            float* p = s + i * dv + j + w * c;
            const Reg written = V::fmadd(ki, d[c], load(p));
            store(p, written);
            acc[c] = V::fmadd(written, qi, acc[c]);
        }
    }
    for (int c = 0; c < C; ++c) store(o + j + w * c, acc[c]);
}

// kernels.h's delta_rule_step: four registers of columns at a time, then one,
// then the masked tail.
template <class V>
void delta_rule_step_with(float* s, int64_t dk, int64_t dv, const float* q, const float* k,
                          const float* v, float beta, float decay, float* delta, float* o) {
    constexpr int64_t w = V::lanes;
    int64_t j = 0;
    for (; j + 4 * w <= dv; j += 4 * w)
        delta_columns<V, 4, false>(s, dk, dv, j, 4 * w, q, k, v, beta, decay, delta, o);
    for (; j + w <= dv; j += w)
        delta_columns<V, 1, false>(s, dk, dv, j, w, q, k, v, beta, decay, delta, o);
    if (j < dv) delta_columns<V, 1, true>(s, dk, dv, j, dv - j, q, k, v, beta, decay, delta, o);
}

}  // namespace anelm::kernels
