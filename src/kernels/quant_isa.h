// The quantized-matrix leaves each instruction set provides behind
// quant_kernels.h. Like isa.h's leaves they work on raw rows, never allocate,
// never throw and never see the thread pool; quant_matmul.cpp does the rest.
#pragma once

#include <cstdint>
#include <vector>

#include "base/half.h"
#include "kernels/quant_kernels.h"

namespace anelm::kernels {

// Tokens rounded to int8 for the integer dot leaves (int8_dot_applies), one
// row of n_in codes after another; each block of int8_block is in the order
// of the leaves' int8_slot.
struct Int8Rows {
    const int8_t* q = nullptr;
    const float* scale = nullptr;  // d of each block, n_in / int8_block per token
    const int32_t* sum = nullptr;  // the sum of each block's q
    int64_t n_in = 0;
    // |q| of each input, where the leaves read it (QuantIsa::int8_six_bit_magnitudes).
    const uint8_t* magnitude = nullptr;
    // Of each token, d times the sum of q over every block, added up: what
    // weights all offset by c add to a row's product, divided by c.
    const float* scaled_sum = nullptr;

    // The tokens from t on.
    Int8Rows token(int64_t t) const {
        const int64_t n_blocks = n_in / int8_block;
        return {q + t * n_in,
                scale + t * n_blocks,
                sum + t * n_blocks,
                n_in,
                magnitude ? magnitude + t * n_in : nullptr,
                scaled_sum ? scaled_sum + t : nullptr};
    }
};

// What the integer leaves of every instruction set read of row o: its int8
// entries (null for int8 codes) and the scale of its sums. Internal linkage,
// as the files including this are compiled for different instruction sets.
static inline const int8_t* int8_row_entries(const QuantMatrix& w, int64_t o) {
    static constexpr int8_t int4_entries[16] = {0,  1,  2,  3,  4,  5,  6,  7,
                                                -8, -7, -6, -5, -4, -3, -2, -1};
    if (w.kind == QuantKind::lut) return w.dot_lut + ((o / w.group) << w.nbits);
    return w.kind == QuantKind::int4 ? int4_entries : nullptr;
}

static inline float int8_row_scale(const QuantMatrix& w, int64_t o) {
    return w.kind == QuantKind::lut ? w.dot_scale[o / w.group] : f16_to_f32(w.scales[o]);
}

struct QuantIsa {
    const char* name;
    // Token rows are handed to gemv in "block order": the leaves decode whole
    // blocks of block_len(nbits) codes (0: none for this width) into vectors
    // whose lanes hold the blocks' inputs in an order their shuffles find
    // cheap, so each block of every token row is permuted once beforehand,
    // input e of a block going to block_slot(nbits, e). Inputs past the last
    // whole block keep their place. Blocks are at most 128 inputs long.
    int64_t (*block_len)(int nbits);
    int64_t (*block_slot)(int nbits, int64_t e);
    // y[t * ldy + o] = sum_i x[t, i] * W[o, i] for t < n_tokens <= gemv_tokens and
    // o0 <= o < o1, the weights streamed once. xb holds the n_tokens rows of x
    // (each n_in long) in block order.
    int gemv_tokens;
    void (*gemv)(const QuantMatrix& w, const float* xb, int64_t n_tokens, int64_t o0, int64_t o1,
                 float* y, int64_t ldy);
    // out[j] = W[o, k0 + j] for j < n.
    void (*decode_row)(const QuantMatrix& w, int64_t o, int64_t k0, int64_t n, float* out);
    // Integer dot products (null where this table has none), int8_dot_applies(w)
    // holding; input e of a block of x is at int8_slot(nbits, e). gemv_int8:
    // y[o] for one token and o0 <= o < o1. gemv_int8_tokens: y[t * ldy + o]
    // for the n_tokens <= int8_pass_tokens rows of x, each block of w decoded
    // once for all of them (null: gemv_int8 token after token). gemm_int8:
    // y[t * ldy + o] for the n_tokens rows of x, each row of w decoded once.
    int64_t (*int8_slot)(int nbits, int64_t e);
    // One block of int8_block inputs rounded as round_to_int8 rounds them (NaN
    // or infinity anywhere: all zero, d NaN), each at its int8_slot in q and
    // |q| in magnitude unless null; returns d and sets *sum to the sum of q.
    // Null: the portable rounding.
    float (*round_int8_block)(const float* x, int nbits, int8_t* q, uint8_t* magnitude,
                              int32_t* sum);
    // The layout the integer leaves read 6-bit codes in: a matrix holding its
    // codes in another (QuantMatrix::int8_layout) takes the exact path.
    Int8Layout int8_six_bit_layout;
    // Whether the integer leaves read Int8Rows::magnitude for 6-bit codes
    // (no leaf reads it for other codes).
    bool int8_six_bit_magnitudes;
    void (*gemv_int8)(const QuantMatrix& w, const Int8Rows& x, int64_t o0, int64_t o1, float* y);
    int int8_pass_tokens;
    void (*gemv_int8_tokens)(const QuantMatrix& w, const Int8Rows& x, int64_t n_tokens, int64_t o0,
                             int64_t o1, float* y, int64_t ldy);
    void (*gemm_int8)(const QuantMatrix& w, const Int8Rows& x, int64_t n_tokens, int64_t o0,
                      int64_t o1, float* y, int64_t ldy);
};

// The layout isa's integer leaves read w's codes in (packed but for 6-bit codes).
inline Int8Layout int8_layout_for(const QuantIsa& isa, const QuantMatrix& w) {
    return w.kind == QuantKind::lut && w.nbits == 6 ? isa.int8_six_bit_layout : Int8Layout::packed;
}

// The leaves matching kernels::active_isa(), or null for the scalar reference.
const QuantIsa* quant_active();

// Every table of leaves this processor can run, best first (tests, benchmarks);
// none while the scalar reference is forced.
std::vector<const QuantIsa*> quant_available();

// kernels::quant_matmul with the given leaves.
void quant_matmul(const QuantIsa& isa, const QuantMatrix& w, const float* x, int64_t n_tokens,
                  float* y, ThreadPool& pool);

#if ANELM_HAVE_X86_KERNELS
extern const QuantIsa avx2_quant_isa;
extern const QuantIsa avx512_quant_isa;  // needs AVX-512 F, BW, VL, DQ, VBMI, VNNI
#endif
#if ANELM_HAVE_ARM_KERNELS
extern const QuantIsa neon_quant_isa;
#endif

}  // namespace anelm::kernels
