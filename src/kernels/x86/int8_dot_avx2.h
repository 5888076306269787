// The AVX2 integer dot product leaves (QuantIsa::int8_slot, round_int8_block, gemv_int8,
// gemv_int8_tokens for up to tokens_per_pass tokens, gemm_int8).
#pragma once

#include <cstdint>

#include "kernels/quant_isa.h"

namespace anelm::kernels::avx2_int8 {

constexpr int tokens_per_pass = 8;

int64_t slot(int nbits, int64_t e);
float round_block(const float* x, int nbits, int8_t* q, uint8_t* magnitude, int32_t* sum);
// round_block for the AVX-512 leaves' slots, whose 4-bit blocks hold the even
// inputs of all 128 first: on hosts with AVX-512, AVX2 rounds for both.
float round_block_evens_of_128(const float* x, int nbits, int8_t* q, uint8_t* magnitude,
                               int32_t* sum);
void gemv(const QuantMatrix& w, const Int8Rows& x, int64_t o0, int64_t o1, float* y);
void gemv_tokens(const QuantMatrix& w, const Int8Rows& x, int64_t n_tokens, int64_t o0, int64_t o1,
                 float* y, int64_t ldy);
void gemm(const QuantMatrix& w, const Int8Rows& x, int64_t n_tokens, int64_t o0, int64_t o1,
          float* y, int64_t ldy);

}  // namespace anelm::kernels::avx2_int8
