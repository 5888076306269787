// NEON leaves for quantized matrices. 4-bit codes (LUT4, int4) decode 64 at a
// time: the nibbles index byte planes of the f32 table with TBL (bytes 1-3;
// byte 0 of an f16 value widened to f32 is zero) and byte / halfword zips
// rebuild the f32 values. 6-bit codes decode 32 at a time: LD3 splits the
// 3-byte groups, shifts form the four codes of each group, a 64-byte TBL of
// the f16 planes looks them up. 1- to 3-bit codes are unpacked one by one and
// looked up 16 at a time like nibbles; 8-bit tables are read one code at a
// time; int8 rows widen directly. Integer rows are summed on the codes and
// scaled once at the end. The integer dot products are in int8_dot_neon.cpp.
#include <bit>

#include "kernels/arm/int8_dot_neon.h"
#include "kernels/arm/neon.h"
#include "kernels/quant_isa.h"
#include "kernels/vec_quant.h"

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
                codes[j] = static_cast<uint8_t>(packed_code_at(row, row_bytes, i + j, NBITS));
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
        const uint32_t code = packed_code_at(row, row_bytes, i, NBITS);
        const float v = INT8 ? static_cast<float>(static_cast<int8_t>(code)) : tab.values[code];
        for (int t = 0; t < T; ++t) sums[t] += v * xb[t * n_in + i];
    }
}

// Decoding for the GEMM path, which reuses each decoded row across many tokens.
template <int NBITS, bool INT8>
void decode(const uint8_t* row, int64_t row_bytes, int64_t k0, int64_t n, const RowTable& tab,
            float scale, float* out) {
    for (int64_t j = 0; j < n; ++j) {
        const uint32_t code = packed_code_at(row, row_bytes, k0 + j, NBITS);
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

constexpr int quant_tokens = 4;

// What vec_quant.h's shared walk needs of this instruction set besides
// load_table, row_dot and decode.
struct Kit {
    using RowTable = neon::RowTable;
    static constexpr int tokens = quant_tokens;
    static float f16_scale(uint16_t h) { return f16_value(h); }
};

using Leaves = VecQuant<Kit>;

}  // namespace

}  // namespace anelm::kernels::neon

namespace anelm::kernels {

const QuantIsa neon_quant_isa = {
    .name = "neon",
    .block_len = neon::block_len,
    .block_slot = neon::block_slot,
    .gemv_tokens = neon::Kit::tokens,
    .gemv = neon::Leaves::gemv,
    .decode_row = neon::Leaves::decode_row,
    .int8_slot = neon_int8::slot,
    .round_int8_block = nullptr,
    .int8_six_bit_layout = Int8Layout::packed,
    .int8_six_bit_magnitudes = false,
    .gemv_int8 = neon_int8::gemv,
    .int8_pass_tokens = neon_int8::tokens_per_pass,
    .gemv_int8_tokens = neon_int8::gemv_tokens,
    .gemm_int8 = nullptr,
};

}  // namespace anelm::kernels
