// What the integer matrix-vector leaves of every instruction set share: the
// layout of the codes, how far ahead they prefetch, and the loops over rows
// and tokens.
// Internal linkage throughout, as the files including this are compiled for
// different instruction sets.
#pragma once

#include <cstdint>

#include "kernels/quant_isa.h"

namespace anelm::kernels {

// 4-bit codes (lut4, int4), 6-bit codes (lut6) or int8 codes.
enum class Int8Codes { nibbles, six_bits, bytes };

static inline Int8Codes int8_codes(const QuantMatrix& w) {
    if (w.kind == QuantKind::int8) return Int8Codes::bytes;
    return w.nbits == 6 ? Int8Codes::six_bits : Int8Codes::nibbles;
}

// Bytes of one row's codes per block of int8_block inputs.
template <Int8Codes C>
static constexpr int64_t int8_block_bytes = C == Int8Codes::nibbles    ? 64
                                            : C == Int8Codes::six_bits ? 96
                                                                       : 128;

// How far ahead of use `rows` rows read together prefetch their codes: a
// short run prefetches the next run, long rows 2 KiB on (gemv_prefetch_at).
static inline int64_t int8_prefetch_ahead(int rows, int64_t row_bytes) {
    return rows * row_bytes <= 8192 ? row_bytes : 2048;
}

// y[t * ldy + o] for the T tokens of x and o0 <= o < o1, L::rows<T> rows at
// a time and then one by one, each row's table loaded only when it differs
// from the last that row slot had. L (an instruction set's leaf for one
// Int8Codes) provides Table, rows<T>, load_table(entries, table) and rows_dot<R, T>(rows,
// row_bytes, tables, x, sums) giving sums[r * T + t] = sum_b d_b * (block b
// of row r . q) for token t of x, each block of a row decoded once for all T.
template <class L, int T>
static void int8_gemv_rows(const QuantMatrix& w, const Int8Rows& x, int64_t o0, int64_t o1,
                           float* y, int64_t ldy) {
    constexpr int rows = L::template rows<T>;
    typename L::Table tables[rows] = {};
    const uint8_t* codes = w.int8_layout == Int8Layout::packed ? w.codes : w.int8_codes;
    const int8_t* loaded[rows] = {};
    const auto run = [&]<int R>(int64_t o) {
        for (int r = 0; r < R; ++r) {
            const int8_t* entries = int8_row_entries(w, o + r);
            if (entries && entries != loaded[r]) L::load_table(loaded[r] = entries, tables[r]);
        }
        float sums[R * T];
        L::template rows_dot<R, T>(codes + o * w.row_bytes(), w.row_bytes(), tables, x, sums);
        for (int r = 0; r < R; ++r) {
            const float scale = int8_row_scale(w, o + r);
            for (int t = 0; t < T; ++t) y[t * ldy + o + r] = sums[r * T + t] * scale;
        }
    };
    int64_t o = o0;
    for (; o + rows <= o1; o += rows) run.template operator()<rows>(o);
    for (; o < o1; ++o) run.template operator()<1>(o);
}

// int8_gemv_rows for 1 <= n_tokens <= T tokens.
template <class L, int T>
static void int8_gemv_tokens_rows(const QuantMatrix& w, const Int8Rows& x, int64_t n_tokens,
                                  int64_t o0, int64_t o1, float* y, int64_t ldy) {
    if constexpr (T > 1) {
        if (n_tokens < T) return int8_gemv_tokens_rows<L, T - 1>(w, x, n_tokens, o0, o1, y, ldy);
    }
    int8_gemv_rows<L, T>(w, x, o0, o1, y, ldy);
}

// f.template operator()<L<C>>() with C the codes of w.
template <template <Int8Codes> class L, class F>
static void int8_with_leaf(const QuantMatrix& w, F&& f) {
    switch (int8_codes(w)) {
        case Int8Codes::bytes:
            return f.template operator()<L<Int8Codes::bytes>>();
        case Int8Codes::six_bits:
            return f.template operator()<L<Int8Codes::six_bits>>();
        case Int8Codes::nibbles:
            return f.template operator()<L<Int8Codes::nibbles>>();
    }
}

// QuantIsa::gemv_int8 from an instruction set's leaves.
template <template <Int8Codes> class L>
static void int8_gemv(const QuantMatrix& w, const Int8Rows& x, int64_t o0, int64_t o1, float* y) {
    int8_with_leaf<L>(w, [&]<class Leaf>() { int8_gemv_rows<Leaf, 1>(w, x, o0, o1, y, 0); });
}

// QuantIsa::gemv_int8_tokens from leaves taking up to L<C>::tokens tokens.
template <template <Int8Codes> class L>
static void int8_gemv_tokens(const QuantMatrix& w, const Int8Rows& x, int64_t n_tokens, int64_t o0,
                             int64_t o1, float* y, int64_t ldy) {
    int8_with_leaf<L>(w, [&]<class Leaf>() {
        int8_gemv_tokens_rows<Leaf, Leaf::tokens>(w, x, n_tokens, o0, o1, y, ldy);
    });
}

}  // namespace anelm::kernels
