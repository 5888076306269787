// NEON integer dot products for quantized matrices (int8_dot_applies). Both
// sides are signed bytes: SDOT sums four products per lane where the compiler
// targets it (Apple silicon does), else SMULL / SMLAL2 pair products in 16
// bits (at most 2 * 128 * 127, no overflow) and SADALP widens them. Weights
// come from TBL look-ups: 16 entries for 4-bit codes, 64 for 6-bit codes,
// which LD3 splits into their four codes per 3-byte group.
#include "kernels/arm/int8_dot_neon.h"

#include <arm_neon.h>

#include "kernels/gemv_prefetch.h"
#include "kernels/int8_rows.h"

namespace anelm::kernels::neon_int8 {

namespace {

using Codes = Int8Codes;

// A row's int8 entries: 16 (4-bit codes) or 64 (6-bit codes).
struct Table {
    int8x16x4_t entries;
};

template <Codes C>
inline void load_table(const int8_t* entries, Table& t) {
    if constexpr (C == Codes::nibbles) {
        t.entries.val[0] = vld1q_s8(entries);
    } else if constexpr (C == Codes::six_bits) {
        t.entries = vld1q_s8_x4(entries);
    }
}

// acc + the sums of four products per lane.
inline int32x4_t dot16(int32x4_t acc, int8x16_t w, int8x16_t x) {
#if defined(__ARM_FEATURE_DOTPROD)
    return vdotq_s32(acc, w, x);
#else
    const int16x8_t pairs = vmlal_high_s8(vmull_s8(vget_low_s8(w), vget_low_s8(x)), w, x);
    return vpadalq_s16(acc, pairs);
#endif
}

// The eight runs of 16 int8 weights of one block of a row, in slot() order.
template <Codes C>
inline void block_weights(const uint8_t* p, const Table& t, int8x16_t w[8]) {
    if constexpr (C == Codes::nibbles) {
        for (int k = 0; k < 4; ++k) {
            const uint8x16_t v = vld1q_u8(p + 16 * k);
            w[2 * k] = vqtbl1q_s8(t.entries.val[0], vandq_u8(v, vdupq_n_u8(15)));
            w[2 * k + 1] = vqtbl1q_s8(t.entries.val[0], vshrq_n_u8(v, 4));
        }
    } else if constexpr (C == Codes::six_bits) {
        for (int h = 0; h < 2; ++h) {
            const uint8x16x3_t g = vld3q_u8(p + 48 * h);
            const uint8x16_t m2 = vdupq_n_u8(3), m4 = vdupq_n_u8(15), m6 = vdupq_n_u8(63);
            const uint8x16_t codes[4] = {
                vandq_u8(g.val[0], m6),
                vorrq_u8(vshrq_n_u8(g.val[0], 6), vshlq_n_u8(vandq_u8(g.val[1], m4), 2)),
                vorrq_u8(vshrq_n_u8(g.val[1], 4), vshlq_n_u8(vandq_u8(g.val[2], m2), 4)),
                vshrq_n_u8(g.val[2], 2)};
            for (int j = 0; j < 4; ++j) w[4 * h + j] = vqtbl4q_s8(t.entries, codes[j]);
        }
    } else {
        for (int k = 0; k < 8; ++k) w[k] = vld1q_s8(reinterpret_cast<const int8_t*>(p) + 16 * k);
    }
}

// sums[r] = sum_b d_b * (block b of row r . q) for R consecutive rows, each
// block of x loaded once for all R.
template <Codes C, int R>
void rows_dot(const uint8_t* rows, int64_t row_bytes, const Table* tables, const Int8Rows& x,
              float* sums) {
    constexpr int64_t bb = int8_block_bytes<C>;
    float32x4_t acc[R];
    for (int r = 0; r < R; ++r) acc[r] = vdupq_n_f32(0.0f);
    const int64_t ahead = int8_prefetch_ahead(R, row_bytes);
    const int64_t n_blocks = x.n_in / int8_block;
    for (int64_t b = 0; b < n_blocks; ++b) {
        const int64_t at = b * bb;
        const uint8_t* pf = gemv_prefetch_at(rows, R, row_bytes, at, ahead);
        int8x16_t xq[8];
        for (int k = 0; k < 8; ++k) xq[k] = vld1q_s8(x.q + b * int8_block + 16 * k);
        for (int r = 0; r < R; ++r) {
            for (int64_t line = 0; line < bb; line += 64)
                __builtin_prefetch(pf + r * row_bytes + line);
            int8x16_t w[8];
            block_weights<C>(rows + r * row_bytes + at, tables[r], w);
            int32x4_t dot[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
            for (int k = 0; k < 8; ++k) dot[k % 2] = dot16(dot[k % 2], w[k], xq[k]);
            acc[r] = vfmaq_n_f32(acc[r], vcvtq_f32_s32(vaddq_s32(dot[0], dot[1])), x.scale[b]);
        }
    }
    for (int r = 0; r < R; ++r) sums[r] = vaddvq_f32(acc[r]);
}

// sums[t] = sum_b d_b * (block b of the row . q) for the T tokens of x, each
// block of the row decoded once for all of them.
template <Codes C, int T>
void row_dot_tokens(const uint8_t* row, const Table& table, const Int8Rows& x, float* sums) {
    constexpr int64_t bb = int8_block_bytes<C>;
    float32x4_t acc[T];
    for (int t = 0; t < T; ++t) acc[t] = vdupq_n_f32(0.0f);
    const int64_t n_in = x.n_in, n_blocks = n_in / int8_block;
    for (int64_t b = 0; b < n_blocks; ++b) {
        int8x16_t w[8];
        block_weights<C>(row + b * bb, table, w);
        for (int t = 0; t < T; ++t) {
            const int8_t* xq = x.q + t * n_in + b * int8_block;
            int32x4_t dot[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};
            for (int k = 0; k < 8; ++k) dot[k % 2] = dot16(dot[k % 2], w[k], vld1q_s8(xq + 16 * k));
            acc[t] = vfmaq_n_f32(acc[t], vcvtq_f32_s32(vaddq_s32(dot[0], dot[1])),
                                 x.scale[t * n_blocks + b]);
        }
    }
    for (int t = 0; t < T; ++t) sums[t] = vaddvq_f32(acc[t]);
}

// The matrix-vector leaves int8_gemv_rows drives: one token over four rows at
// a time, several tokens row by row.
template <Codes C>
struct GemvLeaf {
    using Table = neon_int8::Table;
    template <int T>
    static constexpr int rows = 4;
    static void load_table(const int8_t* entries, Table& t) {
        neon_int8::load_table<C>(entries, t);
    }
    template <int R, int T>
    static void rows_dot(const uint8_t* rows, int64_t row_bytes, const Table* tables,
                         const Int8Rows& x, float* sums) {
        static_assert(T == 1);
        neon_int8::rows_dot<C, R>(rows, row_bytes, tables, x, sums);
    }
};

template <Codes C>
struct TokensLeaf {
    using Table = neon_int8::Table;
    template <int T>
    static constexpr int rows = 1;
    static constexpr int tokens = tokens_per_pass;
    static void load_table(const int8_t* entries, Table& t) {
        neon_int8::load_table<C>(entries, t);
    }
    template <int R, int T>
    static void rows_dot(const uint8_t* row, int64_t, const Table* tables, const Int8Rows& x,
                         float* sums) {
        static_assert(R == 1);
        row_dot_tokens<C, T>(row, tables[0], x, sums);
    }
};

}  // namespace

int64_t slot(int nbits, int64_t e) {
    const int64_t r = e % 64, base = e - r;
    // LD3 of 48 bytes: code j of 3-byte group k (input 4k + j) in run j.
    if (nbits == 6) return base + r % 4 * 16 + r / 4;
    if (nbits != 4) return e;
    // 16 code bytes hold 32 inputs, the even ones in their low nibbles.
    const int64_t q = e % 32;
    return e - q + q % 2 * 16 + q / 2;
}

void gemv(const QuantMatrix& w, const Int8Rows& x, int64_t o0, int64_t o1, float* y) {
    int8_gemv<GemvLeaf>(w, x, o0, o1, y);
}

void gemv_tokens(const QuantMatrix& w, const Int8Rows& x, int64_t n_tokens, int64_t o0, int64_t o1,
                 float* y, int64_t ldy) {
    int8_gemv_tokens<TokensLeaf>(w, x, n_tokens, o0, o1, y, ldy);
}

}  // namespace anelm::kernels::neon_int8
