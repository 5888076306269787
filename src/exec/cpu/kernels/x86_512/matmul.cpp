// AVX-512 matmul leaves: weight panel packing, the mr x (16 nv) GEMM
// micro-kernel and the row-streaming matrix-vector kernel.
#include "exec/cpu/kernels/gemv_prefetch.h"
#include "exec/cpu/kernels/x86_512/avx512.h"

// GCC 12's AVX-512 headers start some intrinsics from a self-initialised
// "undefined" vector, which its uninitialised-use warnings flag once inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace anelm::kernels::avx512 {

namespace {

// In place: rows r[0..16) become columns. Two rounds inside 128-bit lanes
// leave 4x4 blocks transposed; two rounds of lane shuffles put them in place.
inline void transpose16(__m512 r[16]) {
    __m512 t[16], s[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        s[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        s[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xee);
        s[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        s[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    // Lane l of s[4 b + j] holds column 4 l + j of rows 4 b .. 4 b + 3.
    for (int j = 0; j < 4; ++j) {
        const __m512 even_lo = _mm512_shuffle_f32x4(s[j], s[4 + j], 0x88);
        const __m512 odd_lo = _mm512_shuffle_f32x4(s[j], s[4 + j], 0xdd);
        const __m512 even_hi = _mm512_shuffle_f32x4(s[8 + j], s[12 + j], 0x88);
        const __m512 odd_hi = _mm512_shuffle_f32x4(s[8 + j], s[12 + j], 0xdd);
        r[j] = _mm512_shuffle_f32x4(even_lo, even_hi, 0x88);
        r[4 + j] = _mm512_shuffle_f32x4(odd_lo, odd_hi, 0x88);
        r[8 + j] = _mm512_shuffle_f32x4(even_lo, even_hi, 0xdd);
        r[12 + j] = _mm512_shuffle_f32x4(odd_lo, odd_hi, 0xdd);
    }
}

// Sixteen rows by sixteen columns at a time: load (converting), transpose, store.
template <DType D>
void pack(const Matrix& w, int64_t o0, int64_t n_rows, int64_t k0, int64_t kc, float* panel) {
    const auto* base = static_cast<const Elem<D>*>(w.data) + o0 * w.n_in + k0;
    for (int64_t k = 0; k < kc; k += 16) {
        const int64_t n_cols = kc - k < 16 ? kc - k : 16;
        const __mmask16 cols = first_lanes(n_cols);
        for (int g = 0; g < nv; ++g) {
            __m512 r[16];
            for (int j = 0; j < 16; ++j) {
                const int64_t row = g * 16 + j;
                if (row >= n_rows) {
                    r[j] = _mm512_setzero_ps();
                } else {
                    const Elem<D>* p = base + row * w.n_in + k;
                    r[j] = n_cols == 16 ? load16<D>(p) : load16_masked<D>(p, cols);
                }
            }
            transpose16(r);
            for (int64_t c = 0; c < n_cols; ++c)
                _mm512_store_ps(panel + (k + c) * nr + g * 16, r[c]);
        }
    }
}

// One row of a tile into y (n of its nr outputs), added to what is there or not.
inline void store_row(float* out, const __m512* c, int64_t n, bool accumulate) {
#pragma GCC unroll 4
    for (int v = 0; v < nv; ++v) {
        const int64_t left = n - 16 * v;
        if (left <= 0) return;
        const __mmask16 lanes = left >= 16 ? __mmask16{0xffff} : first_lanes(left);
        __m512 s = c[v];
        if (accumulate) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(lanes, out + 16 * v));
        _mm512_mask_storeu_ps(out + 16 * v, lanes, s);
    }
}

// M tokens by nr outputs: per input, nv panel vectors times M broadcasts. The
// loops over m and v are unrolled so the accumulators stay in registers.
template <int M>
void tile(const float* xp, const float* panel, int64_t kc, float* y, int64_t ldy, int64_t n,
          bool accumulate) {
    __m512 acc[M][nv];
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m) {
#pragma GCC unroll 4
        for (int v = 0; v < nv; ++v) acc[m][v] = _mm512_setzero_ps();
        _mm_prefetch(reinterpret_cast<const char*>(y + m * ldy), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(y + m * ldy + nr - 1), _MM_HINT_T0);
    }
#pragma GCC unroll 2
    for (int64_t k = 0; k < kc; ++k) {
        __m512 b[nv];
#pragma GCC unroll 4
        for (int v = 0; v < nv; ++v) b[v] = _mm512_load_ps(panel + k * nr + 16 * v);
#pragma GCC unroll 8
        for (int m = 0; m < M; ++m) {
            const __m512 a = _mm512_set1_ps(xp[k * mr + m]);
#pragma GCC unroll 4
            for (int v = 0; v < nv; ++v) acc[m][v] = _mm512_fmadd_ps(a, b[v], acc[m][v]);
        }
    }
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m) store_row(y + m * ldy, acc[m], n, accumulate);
}

// A 512-bit sum folded to 256 bits.
inline __m256 fold(__m512 v) {
    return _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
}

// The horizontal sums of four vectors, in order.
inline __m128 hsum4(__m512 a, __m512 b, __m512 c, __m512 d) {
    const __m256 abcd =
        _mm256_hadd_ps(_mm256_hadd_ps(fold(a), fold(b)), _mm256_hadd_ps(fold(c), fold(d)));
    return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

// R rows by T tokens, the weights read once: per 16 inputs, R weight vectors
// times T token vectors. With `ahead` > 0 each cache line of weights is
// prefetched that many elements ahead.
template <DType D, int T, int R>
void gemv_block(const Elem<D>* w, int64_t n_in, int64_t ahead, const float* x, float* y,
                int64_t ldy) {
    constexpr int64_t line = 64 / sizeof(Elem<D>);  // elements per cache line
    __m512 acc[R][T];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    }
    const auto step = [&](int64_t i, __mmask16 lanes, bool whole) {
        __m512 xv[T];
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
            xv[t] = whole ? _mm512_loadu_ps(x + t * n_in + i)
                          : _mm512_maskz_loadu_ps(lanes, x + t * n_in + i);
        }
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            const Elem<D>* p = w + r * n_in + i;
            const __m512 wv = whole ? load16<D>(p) : load16_masked<D>(p, lanes);
#pragma GCC unroll 4
            for (int t = 0; t < T; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
        }
    };
    int64_t i = 0;
    for (; i + line <= n_in; i += line) {
        if (ahead > 0) {
            const Elem<D>* pf = gemv_prefetch_at(w, R, n_in, i, ahead);
#pragma GCC unroll 16
            for (int r = 0; r < R; ++r) {
                _mm_prefetch(reinterpret_cast<const char*>(pf + r * n_in), _MM_HINT_T0);
            }
        }
#pragma GCC unroll 2
        for (int64_t j = 0; j < line; j += 16) step(i + j, 0, true);
    }
    for (; i + 16 <= n_in; i += 16) step(i, 0, true);
    if (i < n_in) step(i, first_lanes(n_in - i), false);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
        if constexpr (R % 4 == 0) {
#pragma GCC unroll 4
            for (int r = 0; r < R; r += 4) {
                _mm_storeu_ps(y + t * ldy + r,
                              hsum4(acc[r][t], acc[r + 1][t], acc[r + 2][t], acc[r + 3][t]));
            }
        } else {
#pragma GCC unroll 16
            for (int r = 0; r < R; ++r) y[t * ldy + r] = _mm512_reduce_add_ps(acc[r][t]);
        }
    }
}

// One row times one token: four accumulators, so the adds overlap.
template <DType D>
float row_dot(const Elem<D>* w, const float* x, int64_t n_in) {
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    int64_t i = 0;
    for (; i + 64 <= n_in; i += 64) {
#pragma GCC unroll 4
        for (int a = 0; a < 4; ++a) {
            acc[a] =
                _mm512_fmadd_ps(load16<D>(w + i + 16 * a), _mm512_loadu_ps(x + i + 16 * a), acc[a]);
        }
    }
    for (; i + 16 <= n_in; i += 16)
        acc[0] = _mm512_fmadd_ps(load16<D>(w + i), _mm512_loadu_ps(x + i), acc[0]);
    if (i < n_in) {
        const __mmask16 lanes = first_lanes(n_in - i);
        acc[1] = _mm512_fmadd_ps(load16_masked<D>(w + i, lanes),
                                 _mm512_maskz_loadu_ps(lanes, x + i), acc[1]);
    }
    return _mm512_reduce_add_ps(
        _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
}

template <DType D, int T>
void gemv_rows(const Matrix& w, const float* x, int64_t o0, int64_t o1, float* y, int64_t ldy) {
    const auto* data = static_cast<const Elem<D>*>(w.data);
    if constexpr (T == 1) {
        // One token whose x stays in L1: rows in order, one sequential stream
        // per thread, which the hardware prefetchers follow best
        // (bench/README.md, "Decode: one row at a time").
        if (w.n_in <= gemv_row_max_inputs) {
            for (int64_t o = o0; o < o1; ++o) y[o] = row_dot<D>(data + o * w.n_in, x, w.n_in);
            return;
        }
    }
    // Longer rows or several tokens: rows in blocks, x loaded once per block.
    constexpr int R = T <= 2 ? 8 : 4;
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

using TileFn = void (*)(const float*, const float*, int64_t, float*, int64_t, int64_t, bool);

constexpr TileFn tile_by_tokens[mr] = {tile<1>, tile<2>, tile<3>, tile<4>,
                                       tile<5>, tile<6>, tile<7>, tile<8>};

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
    tile_by_tokens[m - 1](xp, panel, kc, y, ldy, n, accumulate);
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

}  // namespace anelm::kernels::avx512
