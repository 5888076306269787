// NEON matmul leaves: weight panel packing, the 8x12 GEMM micro-kernel and
// the row-streaming matrix-vector kernel.
#include "exec/cpu/kernels/gemv_prefetch.h"
#include "exec/cpu/kernels/arm/neon.h"

namespace anelm::kernels::neon {

namespace {

// In place: rows r[0..4) become columns.
inline void transpose4(float32x4_t r[4]) {
    const float32x4x2_t t01 = vtrnq_f32(r[0], r[1]);
    const float32x4x2_t t23 = vtrnq_f32(r[2], r[3]);
    r[0] = vcombine_f32(vget_low_f32(t01.val[0]), vget_low_f32(t23.val[0]));
    r[1] = vcombine_f32(vget_low_f32(t01.val[1]), vget_low_f32(t23.val[1]));
    r[2] = vcombine_f32(vget_high_f32(t01.val[0]), vget_high_f32(t23.val[0]));
    r[3] = vcombine_f32(vget_high_f32(t01.val[1]), vget_high_f32(t23.val[1]));
}

// Four rows by four columns at a time: load (converting), transpose, store.
template <DType D>
void pack(const Matrix& w, int64_t o0, int64_t n_rows, int64_t k0, int64_t kc, float* panel) {
    const auto* base = static_cast<const Elem<D>*>(w.data) + o0 * w.n_in + k0;
    for (int64_t k = 0; k < kc; k += 4) {
        const int64_t n_cols = kc - k < 4 ? kc - k : 4;
        for (int quad = 0; quad < nr / 4; ++quad) {
            float32x4_t r[4];
            for (int j = 0; j < 4; ++j) {
                const int64_t row = quad * 4 + j;
                if (row >= n_rows) {
                    r[j] = vdupq_n_f32(0.0f);
                } else {
                    const Elem<D>* p = base + row * w.n_in + k;
                    r[j] = n_cols == 4 ? load4<D>(p) : load_partial<D>(p, n_cols);
                }
            }
            transpose4(r);
            for (int64_t c = 0; c < n_cols; ++c) vst1q_f32(panel + (k + c) * nr + quad * 4, r[c]);
        }
    }
}

// One row of a tile into y (n of its 12 outputs), added to what is there or not.
inline void store_row(float* out, float32x4_t c0, float32x4_t c1, float32x4_t c2, int64_t n,
                      bool accumulate) {
    if (n == nr) {
        if (accumulate) {
            c0 = vaddq_f32(c0, vld1q_f32(out));
            c1 = vaddq_f32(c1, vld1q_f32(out + 4));
            c2 = vaddq_f32(c2, vld1q_f32(out + 8));
        }
        vst1q_f32(out, c0);
        vst1q_f32(out + 4, c1);
        vst1q_f32(out + 8, c2);
        return;
    }
    alignas(16) float row[nr];
    vst1q_f32(row, c0);
    vst1q_f32(row + 4, c1);
    vst1q_f32(row + 8, c2);
    for (int64_t j = 0; j < n; ++j) out[j] = accumulate ? out[j] + row[j] : row[j];
}

// Token rows m.. of one input step: each token value is a lane of a (tokens
// 0-3) or a_hi (4-7), so the eight values take two registers, not eight.
template <int M, int m = 0>
inline void fma_rows(float32x4_t (&c)[3][M], float32x4_t b0, float32x4_t b1, float32x4_t b2,
                     float32x4_t a_lo, float32x4_t a_hi) {
    if constexpr (m < M) {
        const float32x4_t a = m < 4 ? a_lo : a_hi;
        c[0][m] = vfmaq_laneq_f32(c[0][m], b0, a, m % 4);
        c[1][m] = vfmaq_laneq_f32(c[1][m], b1, a, m % 4);
        c[2][m] = vfmaq_laneq_f32(c[2][m], b2, a, m % 4);
        fma_rows<M, m + 1>(c, b0, b1, b2, a_lo, a_hi);
    }
}

// M tokens by 12 outputs: per input, three panel vectors times M token lanes.
template <int M>
void tile(const float* xp, const float* panel, int64_t kc, float* y, int64_t ldy, int64_t n,
          bool accumulate) {
    float32x4_t c[3][M];
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m) {
        c[0][m] = c[1][m] = c[2][m] = vdupq_n_f32(0.0f);
        __builtin_prefetch(y + m * ldy);
    }
    for (int64_t k = 0; k < kc; ++k) {
        // Reads up to 8 values of the step; lanes past M are never used.
        const float32x4_t a_lo = vld1q_f32(xp + k * mr);
        const float32x4_t a_hi = M > 4 ? vld1q_f32(xp + k * mr + 4) : a_lo;
        fma_rows<M>(c, vld1q_f32(panel + k * nr), vld1q_f32(panel + k * nr + 4),
                    vld1q_f32(panel + k * nr + 8), a_lo, a_hi);
    }
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m) store_row(y + m * ldy, c[0][m], c[1][m], c[2][m], n, accumulate);
}

// R rows by T tokens, the weights read once: per 8 inputs, R weight vector
// pairs times T token vector pairs. With `ahead` > 0 each cache line of
// weights is prefetched that many elements ahead.
template <DType D, int T, int R>
void gemv_block(const Elem<D>* w, int64_t n_in, int64_t ahead, const float* x, float* y,
                int64_t ldy) {
    constexpr int64_t line = 64 / sizeof(Elem<D>);  // elements per cache line
    float32x4_t acc[R][T];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) acc[r][t] = vdupq_n_f32(0.0f);
    }
    int64_t i = 0;
    for (; i + 8 <= n_in; i += 8) {
        if (ahead > 0 && i % line == 0) {
            const Elem<D>* pf = gemv_prefetch_at(w, R, n_in, i, ahead);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) __builtin_prefetch(pf + r * n_in);
        }
        float32x4_t x_lo[T], x_hi[T];
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
            x_lo[t] = vld1q_f32(x + t * n_in + i);
            x_hi[t] = vld1q_f32(x + t * n_in + i + 4);
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            float32x4_t w_lo, w_hi;
            load8<D>(w + r * n_in + i, w_lo, w_hi);
#pragma GCC unroll 4
            for (int t = 0; t < T; ++t) {
                acc[r][t] = vfmaq_f32(acc[r][t], w_lo, x_lo[t]);
                acc[r][t] = vfmaq_f32(acc[r][t], w_hi, x_hi[t]);
            }
        }
    }
    for (; i < n_in; i += 4) {
        const int64_t len = n_in - i < 4 ? n_in - i : 4;
        float32x4_t xv[T];
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) xv[t] = load_partial<DType::f32>(x + t * n_in + i, len);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const float32x4_t wv = load_partial<D>(w + r * n_in + i, len);
#pragma GCC unroll 4
            for (int t = 0; t < T; ++t) acc[r][t] = vfmaq_f32(acc[r][t], wv, xv[t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
        if constexpr (R % 4 == 0) {
#pragma GCC unroll 2
            for (int r = 0; r < R; r += 4) {
                vst1q_f32(y + t * ldy + r,
                          hsum4(acc[r][t], acc[r + 1][t], acc[r + 2][t], acc[r + 3][t]));
            }
        } else {
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) y[t * ldy + r] = vaddvq_f32(acc[r][t]);
        }
    }
}

template <DType D, int T>
void gemv_rows(const Matrix& w, const float* x, int64_t o0, int64_t o1, float* y, int64_t ldy) {
    // Up to 16 accumulators of 32 registers; one token streams eight rows at once.
    constexpr int R = T == 1 ? 8 : 4;
    const int64_t ahead = gemv_prefetch_ahead(R, w.n_in, sizeof(Elem<D>));
    const auto* data = static_cast<const Elem<D>*>(w.data);
    int64_t o = o0;
    for (; o + R <= o1; o += R) {
        gemv_block<D, T, R>(data + o * w.n_in, w.n_in, ahead, x, y + o, ldy);
    }
    for (; o < o1; ++o) gemv_block<D, T, 1>(data + o * w.n_in, w.n_in, 0, x, y + o, ldy);
}

using GemvFn = void (*)(const Matrix&, const float*, int64_t, int64_t, float*, int64_t);

template <DType D>
constexpr GemvFn gemv_by_tokens[gemv_tokens] = {gemv_rows<D, 1>, gemv_rows<D, 2>, gemv_rows<D, 3>,
                                                gemv_rows<D, 4>};

}  // namespace

void pack_panel(const Matrix& w, int64_t o0, int64_t n_rows, int64_t k0, int64_t kc, float* panel) {
    switch (w.dtype) {
        case DType::f16:
            return pack<DType::f16>(w, o0, n_rows, k0, kc, panel);
        case DType::bf16:
            return pack<DType::bf16>(w, o0, n_rows, k0, kc, panel);
        default:
            return pack<DType::f32>(w, o0, n_rows, k0, kc, panel);
    }
}

void gemm_tile(const float* xp, int64_t m, const float* panel, int64_t kc, float* y, int64_t ldy,
               int64_t n, bool accumulate) {
    switch (m) {
        case 1:
            return tile<1>(xp, panel, kc, y, ldy, n, accumulate);
        case 2:
            return tile<2>(xp, panel, kc, y, ldy, n, accumulate);
        case 3:
            return tile<3>(xp, panel, kc, y, ldy, n, accumulate);
        case 4:
            return tile<4>(xp, panel, kc, y, ldy, n, accumulate);
        case 5:
            return tile<5>(xp, panel, kc, y, ldy, n, accumulate);
        case 6:
            return tile<6>(xp, panel, kc, y, ldy, n, accumulate);
        case 7:
            return tile<7>(xp, panel, kc, y, ldy, n, accumulate);
        default:
            return tile<8>(xp, panel, kc, y, ldy, n, accumulate);
    }
}

void gemv(const Matrix& w, const float* x, int64_t n_tokens, int64_t o0, int64_t o1, float* y,
          int64_t ldy) {
    const int64_t t = n_tokens - 1;
    switch (w.dtype) {
        case DType::f16:
            return gemv_by_tokens<DType::f16>[t](w, x, o0, o1, y, ldy);
        case DType::bf16:
            return gemv_by_tokens<DType::bf16>[t](w, x, o0, o1, y, ldy);
        default:
            return gemv_by_tokens<DType::f32>[t](w, x, o0, o1, y, ldy);
    }
}

}  // namespace anelm::kernels::neon
