// What the exact quantized leaves of every instruction set share (QuantIsa's
// gemv and decode_row): the walk over rows with each row's table loaded only
// when it changes, the scales, and the choice of leaf by code width and token
// count. An instruction set contributes a kit K of its own:
//   K::RowTable, a row's table in the form its look-ups want, and beside it
//   in its namespace (found by argument-dependent lookup):
//     load_table(f16 entries, nbits, RowTable&);
//     row_dot<NBITS, INT8, T>(row, n_in, tab, xb, sums): sums[t] = row .
//       token t for the T token rows of xb (block order);
//     decode<NBITS, INT8>(row, row_bytes, k0, n, tab, scale, out):
//       out[j] = scale * value of code k0 + j;
//   optionally K::row_runs<NBITS, INT8>(w, xb, o0, o1, y): rows from o0 for
//     one token in whatever runs it prefers, returning where it stopped;
//   K::f16_scale(f16 bits) as f32, and K::tokens, the most tokens row_dot takes.
// Internal linkage or templates on K throughout: the files including this are
// compiled for different instruction sets.
#pragma once

#include <cstdint>
#include <utility>

#include "kernels/quant_kernels.h"

namespace anelm::kernels {

// The integers of int4 codes as f16 bits, in code order (two's complement
// nibbles: 0 .. 7, then -8 .. -1).
static constexpr uint16_t int4_f16_entries[16] = {0x0000, 0x3c00, 0x4000, 0x4200, 0x4400, 0x4500,
                                                  0x4600, 0x4700, 0xc800, 0xc700, 0xc600, 0xc500,
                                                  0xc400, 0xc200, 0xc000, 0xbc00};

// The code of element i of a packed row (LSB-first, may straddle two bytes).
static inline uint32_t packed_code_at(const uint8_t* row, int64_t row_bytes, int64_t i, int nbits) {
    const int64_t bit = i * nbits, byte = bit / 8;
    uint32_t v = row[byte];
    if (byte + 1 < row_bytes) v |= static_cast<uint32_t>(row[byte + 1]) << 8;
    return (v >> (bit % 8)) & ((1u << nbits) - 1);
}

// The f16 table row o reads: its group's for lut, the integers for int4.
static inline const uint16_t* quant_row_table(const QuantMatrix& w, int64_t o) {
    return w.kind == QuantKind::lut ? w.lut + ((o / w.group) << w.nbits) : int4_f16_entries;
}

template <class K>
struct VecQuant {
    using RowTable = typename K::RowTable;

    static float row_scale(const QuantMatrix& w, int64_t o) {
        return w.kind == QuantKind::lut ? 1.0f : K::f16_scale(w.scales[o]);
    }

    template <int NBITS, bool INT8, int T>
    static void gemv_rows(const QuantMatrix& w, const float* xb, int64_t o0, int64_t o1, float* y,
                          int64_t ldy) {
        if constexpr (T == 1 && requires { K::template row_runs<NBITS, INT8>(w, xb, o0, o1, y); })
            o0 = K::template row_runs<NBITS, INT8>(w, xb, o0, o1, y);
        RowTable tab{};
        const uint16_t* loaded = nullptr;
        float sums[T];
        for (int64_t o = o0; o < o1; ++o) {
            if constexpr (!INT8) {
                const uint16_t* table = quant_row_table(w, o);
                if (table != loaded) load_table(loaded = table, NBITS, tab);
            }
            row_dot<NBITS, INT8, T>(w.codes + o * w.row_bytes(), w.n_in, tab, xb, sums);
            const float scale = row_scale(w, o);
            for (int t = 0; t < T; ++t) y[t * ldy + o] = sums[t] * scale;
        }
    }

    template <int NBITS, bool INT8>
    static void decode_rows(const QuantMatrix& w, int64_t o, int64_t k0, int64_t n, float* out) {
        RowTable tab{};
        if constexpr (!INT8) load_table(quant_row_table(w, o), NBITS, tab);
        decode<NBITS, INT8>(w.codes + o * w.row_bytes(), w.row_bytes(), k0, n, tab, row_scale(w, o),
                            out);
    }

    // f.template operator()<NBITS, INT8>() for the codes of w; check_quant_matrix
    // has vetted the widths.
    template <class F>
    static void with_width(const QuantMatrix& w, F&& f) {
        if (w.kind == QuantKind::int8) return f.template operator()<8, true>();
        switch (w.nbits) {
            case 1:
                return f.template operator()<1, false>();
            case 2:
                return f.template operator()<2, false>();
            case 3:
                return f.template operator()<3, false>();
            case 4:
                return f.template operator()<4, false>();
            case 6:
                return f.template operator()<6, false>();
            default:
                return f.template operator()<8, false>();
        }
    }

    // The leaves, with quant_isa.h's contracts (1 <= n_tokens <= K::tokens).
    static void gemv(const QuantMatrix& w, const float* xb, int64_t n_tokens, int64_t o0,
                     int64_t o1, float* y, int64_t ldy) {
        with_width(w, [&]<int NBITS, bool INT8>() {
            [&]<int... T>(std::integer_sequence<int, T...>) {
                using Fn =
                    void (*)(const QuantMatrix&, const float*, int64_t, int64_t, float*, int64_t);
                static constexpr Fn by_tokens[] = {gemv_rows<NBITS, INT8, T + 1>...};
                by_tokens[n_tokens - 1](w, xb, o0, o1, y, ldy);
            }
            (std::make_integer_sequence<int, K::tokens>{});
        });
    }

    static void decode_row(const QuantMatrix& w, int64_t o, int64_t k0, int64_t n, float* out) {
        with_width(w, [&]<int NBITS, bool INT8>() { decode_rows<NBITS, INT8>(w, o, k0, n, out); });
    }
};

}  // namespace anelm::kernels
