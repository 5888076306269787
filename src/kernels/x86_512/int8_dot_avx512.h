// The AVX-512 VNNI integer dot product leaves (QuantIsa::int8_slot, gemv_int8,
// gemv_int8_tokens for up to tokens_per_pass tokens, gemm_int8).
#pragma once

#include <cstdint>

#include "kernels/quant_isa.h"

namespace anelm::kernels::avx512_int8 {

constexpr int tokens_per_pass = 8;

int64_t slot(int nbits, int64_t e);
void gemv(const QuantMatrix& w, const Int8Rows& x, int64_t o0, int64_t o1, float* y);
void gemv_tokens(const QuantMatrix& w, const Int8Rows& x, int64_t n_tokens, int64_t o0, int64_t o1,
                 float* y, int64_t ldy);
void gemm(const QuantMatrix& w, const Int8Rows& x, int64_t n_tokens, int64_t o0, int64_t o1,
          float* y, int64_t ldy);

}  // namespace anelm::kernels::avx512_int8
