// The quantized-matrix leaves each instruction set provides behind
// quant_kernels.h. Like isa.h's leaves they work on raw rows, never allocate,
// never throw and never see the thread pool; quant_matmul.cpp does the rest.
#pragma once

#include <cstdint>

#include "exec/cpu/kernels/quant_kernels.h"

namespace anelm::kernels {

// Token rows are handed to the leaves in "block order": for 4-bit codes every
// whole block of 64 inputs is permuted so that the values a 32-byte load of
// codes decodes to (low nibbles, then high nibbles, each as the four 8-value
// runs that byte and word unpacks yield) sit in the order they are produced,
// and for 6-bit codes every whole block of 32 inputs likewise (the runs of one
// byte unpack). NEON reads the same order in runs of four. Inputs past the
// last whole block, and all inputs for other widths, keep their place.
// Element e of a block goes to block_slot(nbits, e); see quant_matmul.cpp.
int64_t quant_block_len(int nbits);  // 64, 32 or 0 (no permutation)
int64_t quant_block_slot(int nbits, int64_t e);

struct QuantIsa {
    const char* name;
    // y[t * ldy + o] = sum_i x[t, i] * W[o, i] for t < n_tokens <= gemv_tokens and
    // o0 <= o < o1, the weights streamed once. xb holds the n_tokens rows of x
    // (each n_in long) in block order.
    int gemv_tokens;
    void (*gemv)(const QuantMatrix& w, const float* xb, int64_t n_tokens, int64_t o0, int64_t o1,
                 float* y, int64_t ldy);
    // out[j] = W[o, k0 + j] for j < n.
    void (*decode_row)(const QuantMatrix& w, int64_t o, int64_t k0, int64_t n, float* out);
};

// The leaves matching kernels::active_isa(), or null for the scalar reference.
const QuantIsa* quant_active();

#if ANELM_HAVE_X86_KERNELS
extern const QuantIsa avx2_quant_isa;
#endif
#if ANELM_HAVE_ARM_KERNELS
extern const QuantIsa neon_quant_isa;
#endif

}  // namespace anelm::kernels
