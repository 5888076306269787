// What the integer matrix-vector leaves of every instruction set share: the
// layout of the codes, how far ahead they prefetch, and the loop over rows.
// Internal linkage throughout, as the files including this are compiled for
// different instruction sets.
#pragma once

#include <cstdint>

#include "exec/cpu/kernels/quant_isa.h"

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

// y[o] for o0 <= o < o1, L::rows rows at a time and then one by one, each
// row's table loaded only when it differs from the last that row slot had.
// L (an instruction set's leaf for one Int8Codes) provides Table, rows,
// load_table(entries, table) and rows_dot<R>(rows, row_bytes, tables, x, sums)
// giving sums[r] = sum_b d_b * (block b of row r . q).
template <class L>
static void int8_gemv_rows(const QuantMatrix& w, const Int8Rows& x, int64_t o0, int64_t o1,
                           float* y) {
    typename L::Table tables[L::rows] = {};
    const int8_t* loaded[L::rows] = {};
    const auto run = [&]<int R>(int64_t o) {
        for (int r = 0; r < R; ++r) {
            const int8_t* entries = int8_row_entries(w, o + r);
            if (entries && entries != loaded[r]) L::load_table(loaded[r] = entries, tables[r]);
        }
        float sums[R];
        L::template rows_dot<R>(w.codes + o * w.row_bytes(), w.row_bytes(), tables, x, sums);
        for (int r = 0; r < R; ++r) y[o + r] = sums[r] * int8_row_scale(w, o + r);
    };
    int64_t o = o0;
    for (; o + L::rows <= o1; o += L::rows) run.template operator()<L::rows>(o);
    for (; o < o1; ++o) run.template operator()<1>(o);
}

// int8_gemv_rows with the leaf for w's codes.
template <template <Int8Codes> class L>
static void int8_gemv(const QuantMatrix& w, const Int8Rows& x, int64_t o0, int64_t o1, float* y) {
    switch (int8_codes(w)) {
        case Int8Codes::bytes:
            return int8_gemv_rows<L<Int8Codes::bytes>>(w, x, o0, o1, y);
        case Int8Codes::six_bits:
            return int8_gemv_rows<L<Int8Codes::six_bits>>(w, x, o0, o1, y);
        case Int8Codes::nibbles:
            return int8_gemv_rows<L<Int8Codes::nibbles>>(w, x, o0, o1, y);
    }
}

}  // namespace anelm::kernels
