// AVX2 matmul leaves: weight panel packing, the 6x16 GEMM micro-kernel and
// the row-streaming matrix-vector kernel.
#include "exec/cpu/kernels/gemv_prefetch.h"
#include "exec/cpu/kernels/x86/avx2.h"

namespace anelm::kernels::avx2 {

namespace {

// In place: rows r[0..8) become columns.
inline void transpose8(__m256 r[8]) {
    __m256 t[8], s[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        s[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        s[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        s[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        s[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; ++i) {
        r[i] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x31);
    }
}

// Eight rows by eight columns at a time: load (converting), transpose, store.
template <DType D>
void pack(const Matrix& w, int64_t o0, int64_t n_rows, int64_t k0, int64_t kc, float* panel) {
    const auto* base = static_cast<const Elem<D>*>(w.data) + o0 * w.n_in + k0;
    for (int64_t k = 0; k < kc; k += 8) {
        const int64_t n_cols = kc - k < 8 ? kc - k : 8;
        for (int half = 0; half < nr / 8; ++half) {
            __m256 r[8];
            for (int j = 0; j < 8; ++j) {
                const int64_t row = half * 8 + j;
                if (row >= n_rows) {
                    r[j] = _mm256_setzero_ps();
                } else {
                    const Elem<D>* p = base + row * w.n_in + k;
                    r[j] = n_cols == 8 ? load8<D>(p) : load_partial<D>(p, n_cols);
                }
            }
            transpose8(r);
            for (int64_t c = 0; c < n_cols; ++c)
                _mm256_store_ps(panel + (k + c) * nr + half * 8, r[c]);
        }
    }
}

// One row of a tile into y (n of its 16 outputs), added to what is there or not.
inline void store_row(float* out, __m256 c0, __m256 c1, int64_t n, bool accumulate) {
    if (n == nr) {
        if (accumulate) {
            c0 = _mm256_add_ps(c0, _mm256_loadu_ps(out));
            c1 = _mm256_add_ps(c1, _mm256_loadu_ps(out + 8));
        }
        _mm256_storeu_ps(out, c0);
        _mm256_storeu_ps(out + 8, c1);
        return;
    }
    alignas(32) float row[nr];
    _mm256_store_ps(row, c0);
    _mm256_store_ps(row + 8, c1);
    for (int64_t j = 0; j < n; ++j) out[j] = accumulate ? out[j] + row[j] : row[j];
}

// M tokens by 16 outputs: per input, two panel vectors times M broadcasts. The
// loops over m are unrolled up front so the accumulators are registers: left to
// itself GCC keeps them in memory and stores them on every iteration.
template <int M>
void tile(const float* xp, const float* panel, int64_t kc, float* y, int64_t ldy, int64_t n,
          bool accumulate) {
    __m256 lo[M], hi[M];
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m) {
        lo[m] = hi[m] = _mm256_setzero_ps();
        _mm_prefetch(reinterpret_cast<const char*>(y + m * ldy), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(y + m * ldy + nr - 1), _MM_HINT_T0);
    }
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; ++k) {
        const __m256 b0 = _mm256_load_ps(panel + k * nr);
        const __m256 b1 = _mm256_load_ps(panel + k * nr + 8);
#pragma GCC unroll 8
        for (int m = 0; m < M; ++m) {
            const __m256 a = _mm256_broadcast_ss(xp + k * mr + m);
            lo[m] = _mm256_fmadd_ps(a, b0, lo[m]);
            hi[m] = _mm256_fmadd_ps(a, b1, hi[m]);
        }
    }
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m) store_row(y + m * ldy, lo[m], hi[m], n, accumulate);
}

// R rows by T tokens, the weights read once: per 8 inputs, R weight vectors
// times T token vectors. With `ahead` > 0 each cache line of weights is
// prefetched that many elements ahead.
template <DType D, int T, int R>
void gemv_block(const Elem<D>* w, int64_t n_in, int64_t ahead, const float* x, float* y,
                int64_t ldy) {
    constexpr int64_t line = 64 / sizeof(Elem<D>);  // elements per cache line
    __m256 acc[R][T];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
    }
    int64_t i = 0;
    for (; i + 8 <= n_in; i += 8) {
        if (ahead > 0 && i % line == 0) {
            const Elem<D>* pf = gemv_prefetch_at(w, R, n_in, i, ahead);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                _mm_prefetch(reinterpret_cast<const char*>(pf + r * n_in), _MM_HINT_T0);
            }
        }
        __m256 xv[T];
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) xv[t] = _mm256_loadu_ps(x + t * n_in + i);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const __m256 wv = load8<D>(w + r * n_in + i);
#pragma GCC unroll 4
            for (int t = 0; t < T; ++t) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
        }
    }
    if (i < n_in) {
        __m256 xv[T];
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) xv[t] = load_partial<DType::f32>(x + t * n_in + i, n_in - i);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const __m256 wv = load_partial<D>(w + r * n_in + i, n_in - i);
#pragma GCC unroll 4
            for (int t = 0; t < T; ++t) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
        if constexpr (R % 4 == 0) {
#pragma GCC unroll 2
            for (int r = 0; r < R; r += 4) {
                _mm_storeu_ps(y + t * ldy + r,
                              hsum4(acc[r][t], acc[r + 1][t], acc[r + 2][t], acc[r + 3][t]));
            }
        } else {
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) y[t * ldy + r] = hsum(acc[r][t]);
        }
    }
}

// One row times one token: four accumulators, so the adds overlap.
template <DType D>
float row_dot(const Elem<D>* w, const float* x, int64_t n_in) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                     _mm256_setzero_ps()};
    int64_t i = 0;
    for (; i + 32 <= n_in; i += 32) {
#pragma GCC unroll 4
        for (int a = 0; a < 4; ++a) {
            acc[a] =
                _mm256_fmadd_ps(load8<D>(w + i + 8 * a), _mm256_loadu_ps(x + i + 8 * a), acc[a]);
        }
    }
    for (; i + 8 <= n_in; i += 8)
        acc[0] = _mm256_fmadd_ps(load8<D>(w + i), _mm256_loadu_ps(x + i), acc[0]);
    if (i < n_in) {
        acc[1] = _mm256_fmadd_ps(load_partial<D>(w + i, n_in - i),
                                 load_partial<DType::f32>(x + i, n_in - i), acc[1]);
    }
    return hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
}

template <DType D, int T>
void gemv_rows(const Matrix& w, const float* x, int64_t o0, int64_t o1, float* y, int64_t ldy) {
    const auto* data = static_cast<const Elem<D>*>(w.data);
    if constexpr (T == 1) {
        // One token whose x stays in L1: rows in order, one sequential stream
        // per thread (bench/README.md, "Decode: one row at a time").
        if (w.n_in <= gemv_row_max_inputs) {
            for (int64_t o = o0; o < o1; ++o) y[o] = row_dot<D>(data + o * w.n_in, x, w.n_in);
            return;
        }
    }
    // Longer rows or several tokens: eight accumulators keep the FMA chains
    // busy without spilling, and x is loaded once for several rows.
    constexpr int R = 8 / (T <= 2 ? T : 4);
    const int64_t ahead = gemv_prefetch_ahead(R, w.n_in, sizeof(Elem<D>));
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
        default:
            return tile<6>(xp, panel, kc, y, ldy, n, accumulate);
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

}  // namespace anelm::kernels::avx2
