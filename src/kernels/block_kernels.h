// Matrix products straight from ggml's block-quantized weights, the rows as a
// GGUF file stores them. The activations are rounded to 8 bits per block the
// way llama.cpp's CPU backend rounds them for the weight type, each block's
// product is summed exactly in integers and scaled as llama.cpp scales it, so
// the results are llama.cpp's up to the order of float additions.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"

namespace anelm::kernels {

// The ggml block types the kernels multiply (ids as GGUF stores them).
enum class BlockType : uint32_t {
    q4_0 = 2,
    q4_1 = 3,
    q5_0 = 6,
    q5_1 = 7,
    q8_0 = 8,
    q2_k = 10,
    q3_k = 11,
    q4_k = 12,
    q5_k = 13,
    q6_k = 14,
    iq4_nl = 20,
};

// Whether ggml_type (a GGUF tensor type id) is one of BlockType.
bool block_type_supported(uint32_t ggml_type);

// Inputs and bytes per block of a type.
struct BlockLayout {
    int64_t elems;
    int64_t bytes;
};
BlockLayout block_layout(BlockType type);

// A weight [n_out, n_in] of ggml blocks: row o starts at data + o * row_bytes
// (row_bytes = n_in / elems * bytes of block_layout; n_in a multiple of elems).
struct BlockMatrix {
    BlockType type = BlockType::q8_0;
    int64_t n_out = 0, n_in = 0;
    const uint8_t* data = nullptr;
    int64_t row_bytes = 0;
};

// Throws unless w is a supported type with whole blocks and consistent sizes.
void check_block_matrix(const BlockMatrix& w);

// y[t, o] = sum_i x[t, i] * W[o, i]; x f32 [n_tokens, n_in], y f32
// [n_tokens, n_out]. Each token's row of x is first rounded as llama.cpp
// rounds it for w's type: q8_0 (blocks of 32, f16 scale) for Q4_0, Q5_0, Q8_0
// and IQ4_NL, q8_1 (q8_0 plus the f16 scaled sum) for Q4_1 and Q5_1, q8_K
// (blocks of 256, f32 scale, sums of each 16) for the K types. Split across
// the pool by rows, and by tokens too for long prompts.
void block_matmul(const BlockMatrix& w, const float* x, int64_t n_tokens, float* y,
                  ThreadPool& pool);

namespace ref {
// The same products by the simplest loops: each block's integer sum and its
// scaling written out as llama.cpp's generic C defines them.
void block_matmul(const BlockMatrix& w, const float* x, int64_t n_tokens, float* y,
                  ThreadPool& pool);
}  // namespace ref

}  // namespace anelm::kernels
