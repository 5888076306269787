// NEON leaves for quantized matrices. 4-bit codes (LUT4, int4) decode 64 at a
// time: the nibbles index byte planes of the f32 table with TBL (bytes 1-3;
// byte 0 of an f16 value widened to f32 is zero) and byte / halfword zips
// rebuild the f32 values. 6-bit codes decode 32 at a time: LD3 splits the
// 3-byte groups, shifts form the four codes of each group, a 64-byte TBL of
// the f16 planes looks them up. 1- to 3-bit codes are unpacked one by one and
// looked up 16 at a time like nibbles; 8-bit tables are read one code at a
// time; int8 rows widen directly. Integer rows are summed on the codes and
// scaled once at the end. The integer dot products are in int8_dot_neon.cpp.
#include <array>
#include <bit>

#include "exec/cpu/kernels/arm/int8_dot_neon.h"
#include "exec/cpu/kernels/arm/neon.h"
#include "exec/cpu/kernels/quant_isa.h"

namespace anelm::kernels::neon {

namespace {

// The values of one row's codes: f32 for the scalar paths, byte planes for the
// vector ones. f32_planes[b]: byte b + 1 of the f32 entries (up to 16, zeros
// past 2^nbits); lo / hi: low / high bytes of the 64 f16 entries (6 bits).
struct RowTable {
    alignas(16) float values[256];
    uint8x16_t f32_planes[3];
    uint8x16x4_t lo;
    uint8x16x4_t hi;
};

float f16_value(uint16_t h) {
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

void load_table(const uint16_t* f16, int nbits, RowTable& t) {
    const int n = 1 << nbits;
    for (int k = 0; k < n; ++k) t.values[k] = f16_value(f16[k]);
    if (nbits <= 4) {
        alignas(16) uint8_t bytes[3][16] = {};
        for (int k = 0; k < n; ++k) {
            const auto u = std::bit_cast<uint32_t>(t.values[k]);
            for (int b = 0; b < 3; ++b) bytes[b][k] = static_cast<uint8_t>(u >> (8 * (b + 1)));
        }
        for (int b = 0; b < 3; ++b) t.f32_planes[b] = vld1q_u8(bytes[b]);
    }
    if (nbits == 6) {
        alignas(16) uint8_t lo[64], hi[64];
        for (int k = 0; k < 64; ++k) {
            lo[k] = static_cast<uint8_t>(f16[k]);
            hi[k] = static_cast<uint8_t>(f16[k] >> 8);
        }
        t.lo = vld1q_u8_x4(lo);
        t.hi = vld1q_u8_x4(hi);
    }
}

// The integer codes of int4 as f16, in code order (two's complement nibbles).
const uint16_t* int4_table() {
    static const auto table = [] {
        std::array<uint16_t, 16> t{};
        for (int k = 0; k < 16; ++k) {
            const float v = static_cast<float>((k ^ 8) - 8);
            t[k] = vget_lane_u16(vreinterpret_u16_f16(vcvt_f16_f32(vdupq_n_f32(v))), 0);
        }
        return t;
    }();
    return table.data();
}

// The code of element i of a packed row (LSB-first, may straddle two bytes).
inline uint32_t code_at(const uint8_t* row, int64_t row_bytes, int64_t i, int nbits) {
    const int64_t bit = i * nbits, byte = bit / 8;
    uint32_t v = row[byte];
    if (byte + 1 < row_bytes) v |= static_cast<uint32_t>(row[byte + 1]) << 8;
    return (v >> (bit % 8)) & ((1u << nbits) - 1);
}

// The f32 entries for 16 codes below 16 (one per byte) as four runs of four
// in order: bytes 0-3, 4-7, 8-11, 12-15.
inline void lookup16(uint8x16_t idx, const RowTable& t, float32x4_t w[4]) {
    const uint8x16_t b1 = vqtbl1q_u8(t.f32_planes[0], idx);
    const uint8x16_t b2 = vqtbl1q_u8(t.f32_planes[1], idx);
    const uint8x16_t b3 = vqtbl1q_u8(t.f32_planes[2], idx);
    const uint8x16_t zero = vdupq_n_u8(0);
    const uint16x8_t l01 = vreinterpretq_u16_u8(vzip1q_u8(zero, b1));
    const uint16x8_t h01 = vreinterpretq_u16_u8(vzip2q_u8(zero, b1));
    const uint16x8_t l23 = vreinterpretq_u16_u8(vzip1q_u8(b2, b3));
    const uint16x8_t h23 = vreinterpretq_u16_u8(vzip2q_u8(b2, b3));
    w[0] = vreinterpretq_f32_u16(vzip1q_u16(l01, l23));
    w[1] = vreinterpretq_f32_u16(vzip2q_u16(l01, l23));
    w[2] = vreinterpretq_f32_u16(vzip1q_u16(h01, h23));
    w[3] = vreinterpretq_f32_u16(vzip2q_u16(h01, h23));
}

// Eight f16 entries of a 64-entry table for eight 6-bit codes, widened.
inline void lookup8_6bit(uint8x8_t idx, const RowTable& t, float32x4_t& first,
                         float32x4_t& second) {
    const uint8x8x2_t f16 = vzip_u8(vqtbl4_u8(t.lo, idx), vqtbl4_u8(t.hi, idx));
    first = vcvt_f32_f16(vreinterpret_f16_u8(f16.val[0]));
    second = vcvt_f32_f16(vreinterpret_f16_u8(f16.val[1]));
}

// A accumulators per token: enough independent FMA chains.
template <int T>
constexpr int n_acc = T == 1 ? 4 : 2;

template <int T>
using Acc = float32x4_t[T][n_acc<T>];

// acc[t] += w * (four inputs of token t at x + t * n_in); `run` picks the accumulator.
template <int T>
inline void fma_run(float32x4_t w, const float* x, int64_t n_in, int run, Acc<T>& acc) {
    for (int t = 0; t < T; ++t) {
        acc[t][run % n_acc<T>] = vfmaq_f32(acc[t][run % n_acc<T>], w, vld1q_f32(x + t * n_in));
    }
}

// sums[t] = sum_i xb[t * n_in + i] * value(code i) over one row.
template <int NBITS, bool INT8, int T>
void row_dot(const uint8_t* row, int64_t n_in, const RowTable& tab, const float* xb, float* sums) {
    constexpr int A = n_acc<T>;
    Acc<T> acc;
    for (int t = 0; t < T; ++t) {
        for (int a = 0; a < A; ++a) acc[t][a] = vdupq_n_f32(0.0f);
    }
    const int64_t row_bytes = (n_in * NBITS + 7) / 8;
    int64_t i = 0;
    float32x4_t w[4];
    if constexpr (INT8) {
        for (; i + 16 <= n_in; i += 16) {
            const int8x16_t v = vld1q_s8(reinterpret_cast<const int8_t*>(row + i));
            const int16x8_t low = vmovl_s8(vget_low_s8(v)), high = vmovl_high_s8(v);
            fma_run<T>(vcvtq_f32_s32(vmovl_s16(vget_low_s16(low))), xb + i, n_in, 0, acc);
            fma_run<T>(vcvtq_f32_s32(vmovl_high_s16(low)), xb + i + 4, n_in, 1, acc);
            fma_run<T>(vcvtq_f32_s32(vmovl_s16(vget_low_s16(high))), xb + i + 8, n_in, 2, acc);
            fma_run<T>(vcvtq_f32_s32(vmovl_high_s16(high)), xb + i + 12, n_in, 3, acc);
        }
    } else if constexpr (NBITS == 4) {
        // Block order: the low nibbles of the 32 bytes, then the high ones.
        for (; i + 64 <= n_in; i += 64) {
            for (int half = 0; half < 2; ++half) {
                const uint8x16_t v = vld1q_u8(row + i / 2 + 16 * half);
                const uint8x16_t nibbles[2] = {vandq_u8(v, vdupq_n_u8(15)), vshrq_n_u8(v, 4)};
                for (int n = 0; n < 2; ++n) {
                    lookup16(nibbles[n], tab, w);
                    for (int r = 0; r < 4; ++r) {
                        fma_run<T>(w[r], xb + i + 32 * n + 16 * half + 4 * r, n_in, r, acc);
                    }
                }
            }
        }
    } else if constexpr (NBITS == 6) {
        // Block order: code j of each 3-byte group k goes to slot 8 j + k.
        for (; i + 32 <= n_in; i += 32) {
            const uint8x8x3_t g = vld3_u8(row + i / 8 * 6);
            const uint8x8_t codes[4] = {
                vand_u8(g.val[0], vdup_n_u8(63)),
                vorr_u8(vshr_n_u8(g.val[0], 6), vshl_n_u8(vand_u8(g.val[1], vdup_n_u8(15)), 2)),
                vorr_u8(vshr_n_u8(g.val[1], 4), vshl_n_u8(vand_u8(g.val[2], vdup_n_u8(3)), 4)),
                vshr_n_u8(g.val[2], 2)};
            for (int j = 0; j < 4; ++j) {
                float32x4_t first, second;
                lookup8_6bit(codes[j], tab, first, second);
                fma_run<T>(first, xb + i + 8 * j, n_in, 0, acc);
                fma_run<T>(second, xb + i + 8 * j + 4, n_in, 1, acc);
            }
        }
    } else if constexpr (NBITS == 8) {
        alignas(16) float values[16];
        for (; i + 16 <= n_in; i += 16) {
            for (int j = 0; j < 16; ++j) values[j] = tab.values[row[i + j]];
            for (int r = 0; r < 4; ++r)
                fma_run<T>(vld1q_f32(values + 4 * r), xb + i + 4 * r, n_in, r, acc);
        }
    }
    if constexpr (NBITS <= 4 && !INT8) {
        // Natural order, 16 codes at a time (all of 1- to 3-bit rows, 4-bit tails).
        alignas(16) uint8_t codes[16];
        for (; i + 16 <= n_in; i += 16) {
            for (int j = 0; j < 16; ++j)
                codes[j] = static_cast<uint8_t>(code_at(row, row_bytes, i + j, NBITS));
            lookup16(vld1q_u8(codes), tab, w);
            for (int r = 0; r < 4; ++r) fma_run<T>(w[r], xb + i + 4 * r, n_in, r, acc);
        }
    }
    for (int t = 0; t < T; ++t) {
        float32x4_t s = acc[t][0];
        for (int a = 1; a < A; ++a) s = vaddq_f32(s, acc[t][a]);
        sums[t] = vaddvq_f32(s);
    }
    for (; i < n_in; ++i) {
        const uint32_t code = code_at(row, row_bytes, i, NBITS);
        const float v = INT8 ? static_cast<float>(static_cast<int8_t>(code)) : tab.values[code];
        for (int t = 0; t < T; ++t) sums[t] += v * xb[t * n_in + i];
    }
}

// The table row o reads: its group's for lut, the integers for int4.
const uint16_t* row_table(const QuantMatrix& w, int64_t o) {
    return w.kind == QuantKind::lut ? w.lut + ((o / w.group) << w.nbits) : int4_table();
}

float row_scale(const QuantMatrix& w, int64_t o) {
    return w.kind == QuantKind::lut ? 1.0f : f16_value(w.scales[o]);
}

template <int NBITS, bool INT8, int T>
void gemv_rows(const QuantMatrix& w, const float* xb, int64_t o0, int64_t o1, float* y,
               int64_t ldy) {
    RowTable tab{};
    const uint16_t* loaded = nullptr;
    float sums[T];
    for (int64_t o = o0; o < o1; ++o) {
        if constexpr (!INT8) {
            const uint16_t* table = row_table(w, o);
            if (table != loaded) load_table(loaded = table, NBITS, tab);
        }
        row_dot<NBITS, INT8, T>(w.codes + o * w.row_bytes(), w.n_in, tab, xb, sums);
        const float scale = row_scale(w, o);
        for (int t = 0; t < T; ++t) y[t * ldy + o] = sums[t] * scale;
    }
}

// Decoding for the GEMM path, which reuses each decoded row across many tokens.
template <int NBITS, bool INT8>
void decode(const QuantMatrix& w, int64_t o, int64_t k0, int64_t n, float* out) {
    RowTable tab{};
    if constexpr (!INT8) load_table(row_table(w, o), NBITS, tab);
    const uint8_t* row = w.codes + o * w.row_bytes();
    const float scale = row_scale(w, o);
    for (int64_t j = 0; j < n; ++j) {
        const uint32_t code = code_at(row, w.row_bytes(), k0 + j, NBITS);
        out[j] = (INT8 ? static_cast<float>(static_cast<int8_t>(code)) : tab.values[code]) * scale;
    }
}

// Block order (quant_isa.h): 4-bit blocks of 64 are the 32 low nibbles of two
// 16-byte loads, then the 32 high ones; 6-bit blocks of 32 put code j of
// 3-byte group k at 8 j + k.
int64_t block_len(int nbits) {
    return nbits == 4 ? 64 : nbits == 6 ? 32 : 0;
}

int64_t block_slot(int nbits, int64_t e) {
    if (nbits == 4) return (e & 1) * 32 + (e >> 1);
    return (e & 3) * 8 + (e >> 2);
}

using GemvFn = void (*)(const QuantMatrix&, const float*, int64_t, int64_t, float*, int64_t);
using DecodeFn = void (*)(const QuantMatrix&, int64_t, int64_t, int64_t, float*);

constexpr int quant_tokens = 4;

// The leaves of one code width; check_quant_matrix has vetted the widths.
template <int NBITS, bool INT8>
struct Leaves {
    static constexpr GemvFn gemv[quant_tokens] = {
        gemv_rows<NBITS, INT8, 1>, gemv_rows<NBITS, INT8, 2>, gemv_rows<NBITS, INT8, 3>,
        gemv_rows<NBITS, INT8, 4>};
    static constexpr DecodeFn decode_row = decode<NBITS, INT8>;
};

GemvFn gemv_for(const QuantMatrix& w, int64_t n_tokens) {
    const auto t = static_cast<size_t>(n_tokens - 1);
    if (w.kind == QuantKind::int8) return Leaves<8, true>::gemv[t];
    switch (w.nbits) {
        case 1:
            return Leaves<1, false>::gemv[t];
        case 2:
            return Leaves<2, false>::gemv[t];
        case 3:
            return Leaves<3, false>::gemv[t];
        case 4:
            return Leaves<4, false>::gemv[t];
        case 6:
            return Leaves<6, false>::gemv[t];
        default:
            return Leaves<8, false>::gemv[t];
    }
}

DecodeFn decode_for(const QuantMatrix& w) {
    if (w.kind == QuantKind::int8) return Leaves<8, true>::decode_row;
    switch (w.nbits) {
        case 1:
            return Leaves<1, false>::decode_row;
        case 2:
            return Leaves<2, false>::decode_row;
        case 3:
            return Leaves<3, false>::decode_row;
        case 4:
            return Leaves<4, false>::decode_row;
        case 6:
            return Leaves<6, false>::decode_row;
        default:
            return Leaves<8, false>::decode_row;
    }
}

void quant_gemv(const QuantMatrix& w, const float* xb, int64_t n_tokens, int64_t o0, int64_t o1,
                float* y, int64_t ldy) {
    gemv_for(w, n_tokens)(w, xb, o0, o1, y, ldy);
}

void quant_decode_row(const QuantMatrix& w, int64_t o, int64_t k0, int64_t n, float* out) {
    decode_for(w)(w, o, k0, n, out);
}

}  // namespace

}  // namespace anelm::kernels::neon

namespace anelm::kernels {

const QuantIsa neon_quant_isa = {
    .name = "neon",
    .block_len = neon::block_len,
    .block_slot = neon::block_slot,
    .gemv_tokens = neon::quant_tokens,
    .gemv = neon::quant_gemv,
    .decode_row = neon::quant_decode_row,
    .int8_slot = neon_int8::slot,
    .gemv_int8 = neon_int8::gemv,
    .gemm_int8 = nullptr,
};

}  // namespace anelm::kernels
