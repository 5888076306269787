// The dense matmul leaves of isa.h (pack_panel, gemm_tile, gemv), blocked and
// tiled once over an instruction set's vector layer F (x86/avx2.h,
// x86_512/avx512.h, arm/neon.h: F::V of F::lanes f32 lanes, its loads with
// f16/bf16 conversion, fma, sums, an in-register transpose, and optionally
// F::Tokens: how a tile step's tokens reach its FMAs other than by broadcasts
// from memory). Every function here is a template on F, so a file compiled
// with one instruction set's flags never shares code with another's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "kernels/gemv_prefetch.h"
#include "kernels/isa.h"

namespace anelm::kernels {

// How a gemv leaf streams its rows: rows[t - 1] rows read together for t
// tokens (enough accumulators to hide the FMA latency without spilling),
// whether one token reads rows alone, one after another, while x fits in L1,
// and the most tokens one call takes (4, or up to 8 where each block of
// rows[3] rows is read for four tokens, then again from L1 for the rest).
struct GemvShape {
    int rows[4];
    bool one_row_alone;
    int tokens = 4;
};

template <class F, int MR, int NR, GemvShape G>
struct VecMatmul {
    using V = typename F::V;
    static constexpr int L = F::lanes;
    static constexpr int NV = NR / L;  // panel vectors per tile row
    static_assert(NR % L == 0 && MR <= 8 && G.tokens >= 4 && G.tokens <= 8);

    template <DType D>
    using Elem = std::conditional_t<D == DType::f32, float, uint16_t>;

    // L rows by L columns at a time: load (converting), transpose, store.
    template <DType D>
    static void pack(const Matrix& w, int64_t o0, int64_t n_rows, int64_t k0, int64_t kc,
                     float* panel) {
        const auto* base = static_cast<const Elem<D>*>(w.data) + o0 * w.n_in + k0;
        for (int64_t k = 0; k < kc; k += L) {
            const int64_t n_cols = kc - k < L ? kc - k : L;
            for (int g = 0; g < NV; ++g) {
                V r[L];
                for (int j = 0; j < L; ++j) {
                    const int64_t row = g * L + j;
                    if (row >= n_rows) {
                        r[j] = F::zero();
                    } else {
                        const Elem<D>* p = base + row * w.n_in + k;
                        r[j] = n_cols == L ? F::template load<D>(p)
                                           : F::template load_first<D>(p, n_cols);
                    }
                }
                F::transpose(r);
                for (int64_t c = 0; c < n_cols; ++c)
                    F::store_aligned(panel + (k + c) * NR + g * L, r[c]);
            }
        }
    }

    // One row of a tile into y (n of its NR outputs), added to what is there or not.
    static void store_row(float* out, const V* c, int64_t n, bool accumulate) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
            const int64_t left = n - L * v;
            if (left <= 0) return;
            float* p = out + L * v;
            V s = c[v];
            if (left >= L) {
                if (accumulate) s = F::add(s, F::template load<DType::f32>(p));
                F::store(p, s);
            } else {
                if (accumulate) s = F::add(s, F::template load_first<DType::f32>(p, left));
                F::store_first(p, s, left);
            }
        }
    }

    // acc[m] += b * token m of the step at xk, for every m < M: broadcasts from
    // memory, or the layer's lane FMAs (m a constant, as those need).
    template <int M, int... m>
    static void fma_tokens(V (&acc)[M][NV], const V (&b)[NV], const float* xk,
                           std::integer_sequence<int, m...>) {
        if constexpr (requires { typename F::Tokens; }) {
            const typename F::Tokens a = F::load_tokens(xk, M);
            const auto row = [&]<int t>() {
#pragma GCC unroll 4
                for (int v = 0; v < NV; ++v)
                    acc[t][v] = F::template fma_token<t>(acc[t][v], b[v], a);
            };
            (row.template operator()<m>(), ...);
        } else {
#pragma GCC unroll 8
            for (int t = 0; t < M; ++t) {
                const V a = F::set1(xk[t]);
#pragma GCC unroll 4
                for (int v = 0; v < NV; ++v) acc[t][v] = F::fma(a, b[v], acc[t][v]);
            }
        }
    }

    // M tokens by NR outputs: per input, NV panel vectors times M tokens. The
    // loops are unrolled so the accumulators stay in registers.
    template <int M>
    static void tile(const float* xp, const float* panel, int64_t kc, float* y, int64_t ldy,
                     int64_t n, bool accumulate) {
        V acc[M][NV];
#pragma GCC unroll 8
        for (int m = 0; m < M; ++m) {
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) acc[m][v] = F::zero();
            F::prefetch(y + m * ldy);
            F::prefetch(y + m * ldy + NR - 1);
        }
#pragma GCC unroll 2
        for (int64_t k = 0; k < kc; ++k) {
            V b[NV];
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) b[v] = F::load_aligned(panel + k * NR + L * v);
            fma_tokens<M>(acc, b, xp + k * MR, std::make_integer_sequence<int, M>{});
        }
#pragma GCC unroll 8
        for (int m = 0; m < M; ++m) store_row(y + m * ldy, acc[m], n, accumulate);
    }

    // R rows by T tokens, the weights read once: per L inputs, R weight vectors
    // times T token vectors. With `ahead` > 0 each cache line of weights is
    // prefetched that many elements ahead.
    template <DType D, int T, int R>
    static void gemv_block(const Elem<D>* w, int64_t n_in, int64_t ahead, const float* x, float* y,
                           int64_t ldy) {
        constexpr int64_t line = 64 / sizeof(Elem<D>);  // elements per cache line
        V acc[R][T];
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
            for (int t = 0; t < T; ++t) acc[r][t] = F::zero();
        }
        const auto step = [&](int64_t i, int64_t len) {
            V xv[T];
#pragma GCC unroll 4
            for (int t = 0; t < T; ++t) {
                const float* p = x + t * n_in + i;
                xv[t] = len == L ? F::template load<DType::f32>(p)
                                 : F::template load_first<DType::f32>(p, len);
            }
#pragma GCC unroll 16
            for (int r = 0; r < R; ++r) {
                const Elem<D>* p = w + r * n_in + i;
                const V wv = len == L ? F::template load<D>(p) : F::template load_first<D>(p, len);
#pragma GCC unroll 4
                for (int t = 0; t < T; ++t) acc[r][t] = F::fma(wv, xv[t], acc[r][t]);
            }
        };
        int64_t i = 0;
        for (; i + L <= n_in; i += L) {
            if (ahead > 0 && i % line == 0) {
                const Elem<D>* pf = gemv_prefetch_at(w, R, n_in, i, ahead);
#pragma GCC unroll 16
                for (int r = 0; r < R; ++r) F::prefetch(pf + r * n_in);
            }
            step(i, L);
        }
        if (i < n_in) step(i, n_in - i);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
            if constexpr (R % 4 == 0) {
#pragma GCC unroll 4
                for (int r = 0; r < R; r += 4) {
                    F::store_sums4(y + t * ldy + r, acc[r][t], acc[r + 1][t], acc[r + 2][t],
                                   acc[r + 3][t]);
                }
            } else {
#pragma GCC unroll 16
                for (int r = 0; r < R; ++r) y[t * ldy + r] = F::sum(acc[r][t]);
            }
        }
    }

    // R rows by T tokens: four tokens, then the rest over the same rows, read
    // again from L1. A verify pass's 8 tokens so read the weights from memory
    // once; one block of 8 tokens' accumulators leaves registers for two rows
    // only, too few FMAs per x load (64% of the FMA rate on Zen 4, against 90%
    // with the rows read twice; bench/README.md, "Verify: a few tokens with
    // f16 weights").
    template <DType D, int T, int R>
    static void gemv_groups(const Elem<D>* w, int64_t n_in, int64_t ahead, const float* x, float* y,
                            int64_t ldy) {
        if constexpr (T <= 4) {
            gemv_block<D, T, R>(w, n_in, ahead, x, y, ldy);
        } else {
            gemv_block<D, 4, R>(w, n_in, ahead, x, y, ldy);
            gemv_block<D, T - 4, R>(w, n_in, 0, x + 4 * n_in, y + 4 * ldy, ldy);
        }
    }

    // One row times one token: four accumulators, so the adds overlap.
    template <DType D>
    static float row_dot(const Elem<D>* w, const float* x, int64_t n_in) {
        V acc[4] = {F::zero(), F::zero(), F::zero(), F::zero()};
        int64_t i = 0;
        for (; i + 4 * L <= n_in; i += 4 * L) {
#pragma GCC unroll 4
            for (int a = 0; a < 4; ++a) {
                acc[a] = F::fma(F::template load<D>(w + i + L * a),
                                F::template load<DType::f32>(x + i + L * a), acc[a]);
            }
        }
        for (; i + L <= n_in; i += L)
            acc[0] =
                F::fma(F::template load<D>(w + i), F::template load<DType::f32>(x + i), acc[0]);
        if (i < n_in) {
            acc[1] = F::fma(F::template load_first<D>(w + i, n_in - i),
                            F::template load_first<DType::f32>(x + i, n_in - i), acc[1]);
        }
        return F::sum(F::add(F::add(acc[0], acc[1]), F::add(acc[2], acc[3])));
    }

    template <DType D, int T>
    static void gemv_rows(const Matrix& w, const float* x, int64_t o0, int64_t o1, float* y,
                          int64_t ldy) {
        const auto* data = static_cast<const Elem<D>*>(w.data);
        if constexpr (T == 1 && G.one_row_alone) {
            // One token whose x stays in L1: rows in order, one sequential
            // stream per thread (bench/README.md, "Decode: one row at a time").
            if (w.n_in <= gemv_row_max_inputs) {
                for (int64_t o = o0; o < o1; ++o) y[o] = row_dot<D>(data + o * w.n_in, x, w.n_in);
                return;
            }
        }
        constexpr int R = G.rows[std::min(T, 4) - 1];
        const int64_t ahead = gemv_prefetch_ahead(R, w.n_in, sizeof(Elem<D>));
        int64_t o = o0;
        for (; o + R <= o1; o += R) {
            gemv_groups<D, T, R>(data + o * w.n_in, w.n_in, ahead, x, y + o, ldy);
        }
        for (; o < o1; ++o) gemv_groups<D, T, 1>(data + o * w.n_in, w.n_in, 0, x, y + o, ldy);
    }

    // The leaves, with isa.h's contracts.
    static void pack_panel(const Matrix& w, int64_t o0, int64_t n_rows, int64_t k0, int64_t kc,
                           float* panel) {
        switch (w.dtype) {
            case DType::f16:
                return pack<DType::f16>(w, o0, n_rows, k0, kc, panel);
            case DType::bf16:
                return pack<DType::bf16>(w, o0, n_rows, k0, kc, panel);
            default:
                return pack<DType::f32>(w, o0, n_rows, k0, kc, panel);
        }
    }

    static void gemm_tile(const float* xp, int64_t m, const float* panel, int64_t kc, float* y,
                          int64_t ldy, int64_t n, bool accumulate) {
        [&]<int... M>(std::integer_sequence<int, M...>) {
            using TileFn =
                void (*)(const float*, const float*, int64_t, float*, int64_t, int64_t, bool);
            static constexpr TileFn by_tokens[] = {tile<M + 1>...};
            by_tokens[m - 1](xp, panel, kc, y, ldy, n, accumulate);
        }
        (std::make_integer_sequence<int, MR>{});
    }

    static void gemv(const Matrix& w, const float* x, int64_t n_tokens, int64_t o0, int64_t o1,
                     float* y, int64_t ldy) {
        const auto run = [&]<DType D>() {
            [&]<int... T>(std::integer_sequence<int, T...>) {
                using RowsFn =
                    void (*)(const Matrix&, const float*, int64_t, int64_t, float*, int64_t);
                static constexpr RowsFn by_tokens[] = {gemv_rows<D, T + 1>...};
                by_tokens[n_tokens - 1](w, x, o0, o1, y, ldy);
            }
            (std::make_integer_sequence<int, G.tokens>{});
        };
        switch (w.dtype) {
            case DType::f16:
                return run.template operator()<DType::f16>();
            case DType::bf16:
                return run.template operator()<DType::bf16>();
            default:
                return run.template operator()<DType::f32>();
        }
    }
};

}  // namespace anelm::kernels
