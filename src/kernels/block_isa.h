// The block-quantized leaves each instruction set provides behind
// block_kernels.h, and the rounded activations they read. Like isa.h's leaves
// they work on raw rows, never allocate, never throw and never see the thread
// pool; block_kernels.cpp rounds the tokens and splits the work.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/block_kernels.h"

namespace anelm::kernels {

// How the activations are rounded for a weight type: llama.cpp's vec_dot_type.
enum class ActFormat { q8_0, q8_1, q8_k };
ActFormat act_format(BlockType type);

// Inputs per block of a format (32, or 256 for q8_K) and per q8_K sum.
int64_t act_block(ActFormat f);
constexpr int64_t act_sum_len = 16;

// Tokens rounded to 8 bits, one row of n_in after another, inputs in their
// natural order. Token t's input i is about q[i] * d[i / block].
struct BlockActs {
    const int8_t* q = nullptr;
    const float* d = nullptr;        // each block's scale (q8_0, q8_1: the f16 value)
    const float* s = nullptr;        // q8_1: each block's f16(d * sum q), else null
    const int16_t* bsums = nullptr;  // q8_K: the sum of each 16 q, else null
    int64_t n_in = 0;
    int64_t block = 32;
    // q + 128 as unsigned bytes, the inputs as unsigned-by-signed dot
    // instructions (VNNI) take them against signed weights; set for
    // BlockIsa::gemm, else null.
    const uint8_t* qu = nullptr;

    // The tokens from t on.
    BlockActs token(int64_t t) const {
        const int64_t n_blocks = n_in / block, n_sums = n_in / act_sum_len;
        return {q + t * n_in,
                d + t * n_blocks,
                s ? s + t * n_blocks : nullptr,
                bsums ? bsums + t * n_sums : nullptr,
                n_in,
                block,
                qu ? qu + t * n_in : nullptr};
    }
};

// One token's row of n_in inputs rounded: q, a scale per block in d, and s
// or bsums where the format has them (else they may be null). q8_0 and q8_1
// round as llama.cpp's x86 quantize_row_q8_0/_1 (d = max |x| / 127 kept as
// f16, q = x * 127 / max |x| to nearest even), q8_K as quantize_row_q8_K_ref
// (the largest magnitude's sign kept: d = max / -127, q at most 127). A
// block holding an infinity or NaN gets q = 0 and a NaN d (and s), so that
// the product is NaN.
void round_token(ActFormat f, const float* x, int64_t n_in, int8_t* q, float* d, float* s,
                 int16_t* bsums);

// y[t * ldy + o] = row o of w times token t of x, for t < n_tokens <=
// BlockIsa::pass_tokens and o0 <= o < o1, the rows streamed once.
using BlockGemv = void (*)(const BlockMatrix& w, const BlockActs& x, int64_t n_tokens, int64_t o0,
                           int64_t o1, float* y, int64_t ldy);

// Up to this many tokens a product streams the rows in passes of
// BlockIsa::pass_tokens; beyond, the GEMM leaf runs where there is one.
constexpr int64_t block_gemv_max_tokens = 16;

struct BlockIsa {
    const char* name;
    int pass_tokens;
    // The leaf for a weight type, or null where the scalar leaf runs.
    BlockGemv (*leaf)(BlockType type);
    // Products of n_tokens > block_gemv_max_tokens tokens: y[t * ldy + o] for
    // every token of x (x.qu set) and o0 <= o < o1, each row decoded once for
    // all of them; null (or a null leaf) where passes of leaf are faster.
    BlockGemv (*gemm)(BlockType type, int64_t n_tokens);
    // round_token, bit for bit; null where the portable one runs.
    void (*round)(ActFormat f, const float* x, int64_t n_in, int8_t* q, float* d, float* s,
                  int16_t* bsums);
};

// The leaves for kernels::active(): AVX-512 with VNNI under the avx512 dense
// table, AVX2 under either x86 table; null for the scalar leaves.
const BlockIsa* block_active();

// Every table of leaves this processor can run, best first (tests, benchmarks);
// none while the scalar reference is forced.
std::vector<const BlockIsa*> block_available();

// kernels::block_matmul with the given leaves (null: the scalar leaves).
void block_matmul(const BlockIsa* isa, const BlockMatrix& w, const float* x, int64_t n_tokens,
                  float* y, ThreadPool& pool);

namespace ref {
// Row `row` of a weight of `type` times one token: the scalar leaf's sum.
float block_row_dot(BlockType type, const uint8_t* row, const BlockActs& x);
}  // namespace ref

#if ANELM_HAVE_X86_KERNELS
extern const BlockIsa avx2_block_isa;
extern const BlockIsa avx512_block_isa;  // needs AVX-512 F, BW, VL, DQ and VNNI
#endif

// What the SIMD leaves share; internal linkage throughout, as the files
// including this are compiled for different instruction sets.

static inline uint32_t block_u32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// Q4_K/Q5_K's eight 6-bit scales and mins from the 12 bytes at p, one per
// byte of `scales` and `mins`: scale j < 4 in the low 6 bits of byte j, its
// min in byte j + 4; for j >= 4 the low 4 bits in byte j + 4 (scale low
// nibble, min high), the top 2 in the spare top bits of bytes j - 4 (scale)
// and j (min). Whole words at a time, as llama.cpp unpacks them.
static inline void k4_scales_mins(const uint8_t* p, uint64_t& scales, uint64_t& mins) {
    const uint32_t a = block_u32(p), b = block_u32(p + 4), c = block_u32(p + 8);
    const uint32_t scales_hi = (c & 0x0f0f0f0f) | ((a >> 6) & 0x03030303) << 4;
    const uint32_t mins_hi = ((c >> 4) & 0x0f0f0f0f) | ((b >> 6) & 0x03030303) << 4;
    scales = (a & 0x3f3f3f3f) | uint64_t{scales_hi} << 32;
    mins = (b & 0x3f3f3f3f) | uint64_t{mins_hi} << 32;
}

// Q3_K's sixteen 6-bit scales minus 32 from the 12 bytes at p, as int8 bytes
// of four words (scale g in byte g % 4 of word g / 4): the low 4 bits of
// scale g are nibble g / 8 of byte g % 8, its top 2 bits 2 (g / 4) of byte
// 8 + g % 4.
struct Q3KScales {
    uint32_t words[4];
};

static inline Q3KScales q3_k_scales(const uint8_t* p) {
    const uint32_t a = block_u32(p), b = block_u32(p + 4), c = block_u32(p + 8);
    const uint32_t low4 = 0x0f0f0f0f, top2 = 0x03030303;
    const uint32_t unbiased[4] = {(a & low4) | (c & top2) << 4, (b & low4) | (c >> 2 & top2) << 4,
                                  (a >> 4 & low4) | (c >> 4 & top2) << 4,
                                  (b >> 4 & low4) | (c >> 6 & top2) << 4};
    // Each byte v (0..63) to v - 32 without borrows between bytes: (v + 96) ^ 128.
    Q3KScales s;
    for (int i = 0; i < 4; ++i) s.words[i] = ((unbiased[i] | 0x80808080) - 0x20202020) ^ 0x80808080;
    return s;
}

// A leaf from L::row_dot<T>(row, x, sums), which gives sums[t] for the T
// tokens of x, each block of the row decoded once for all of them; rows are
// read one after another (one sequential stream per thread, bench/README.md
// "Decode: one row at a time").
template <class L, int T>
static void block_gemv_rows(const BlockMatrix& w, const BlockActs& x, int64_t n_tokens, int64_t o0,
                            int64_t o1, float* y, int64_t ldy) {
    if constexpr (T > 1) {
        if (n_tokens < T) return block_gemv_rows<L, T - 1>(w, x, n_tokens, o0, o1, y, ldy);
    }
    for (int64_t o = o0; o < o1; ++o) {
        float sums[T];
        L::template row_dot<T>(w.data + o * w.row_bytes, x, sums);
        for (int t = 0; t < T; ++t) y[t * ldy + o] = sums[t];
    }
}

// BlockIsa::leaf from an instruction set's row leaves: B32<D> over 32-input
// blocks and BK<D> over 256-input super-blocks, D its decoder of each type
// (listed in BlockType order), read in passes of up to T tokens.
template <int T, template <class> class B32, template <class> class BK, class Q4_0, class Q4_1,
          class Q5_0, class Q5_1, class Q8_0, class IQ4_NL, class Q2_K, class Q3_K, class Q4_K,
          class Q5_K, class Q6_K>
static BlockGemv block_leaf(BlockType type) {
    switch (type) {
        case BlockType::q4_0:
            return block_gemv_rows<B32<Q4_0>, T>;
        case BlockType::q4_1:
            return block_gemv_rows<B32<Q4_1>, T>;
        case BlockType::q5_0:
            return block_gemv_rows<B32<Q5_0>, T>;
        case BlockType::q5_1:
            return block_gemv_rows<B32<Q5_1>, T>;
        case BlockType::q8_0:
            return block_gemv_rows<B32<Q8_0>, T>;
        case BlockType::iq4_nl:
            return block_gemv_rows<B32<IQ4_NL>, T>;
        case BlockType::q2_k:
            return block_gemv_rows<BK<Q2_K>, T>;
        case BlockType::q3_k:
            return block_gemv_rows<BK<Q3_K>, T>;
        case BlockType::q4_k:
            return block_gemv_rows<BK<Q4_K>, T>;
        case BlockType::q5_k:
            return block_gemv_rows<BK<Q5_K>, T>;
        case BlockType::q6_k:
            return block_gemv_rows<BK<Q6_K>, T>;
    }
    return nullptr;
}

}  // namespace anelm::kernels
