// The AVX-512 VNNI integer dot product leaves (QuantIsa::int8_slot, gemv_int8, gemm_int8).
#pragma once

#include <cstdint>

#include "exec/cpu/kernels/quant_isa.h"

namespace anelm::kernels::avx512_int8 {

int64_t slot(int nbits, int64_t e);
void gemv(const QuantMatrix& w, const Int8Rows& x, int64_t o0, int64_t o1, float* y);
void gemm(const QuantMatrix& w, const Int8Rows& x, int64_t n_tokens, int64_t o0, int64_t o1,
          float* y, int64_t ldy);

}  // namespace anelm::kernels::avx512_int8
