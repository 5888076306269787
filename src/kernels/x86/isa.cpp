// The AVX2 + FMA + F16C leaf table, chosen at run time by dispatch.cpp.
#include "kernels/x86/avx2.h"

namespace anelm::kernels {

const Isa avx2_isa = {
    .name = "avx2",
    .mr = avx2::mr,
    .nr = avx2::nr,
    .pack_panel = avx2::pack_panel,
    .gemm_tile = avx2::gemm_tile,
    .gemv_tokens = avx2::gemv_tokens,
    .gemv = avx2::gemv,
    .attend = avx2::attend,
    .attend_q8 = avx2::attend_q8,
    .rms_norm = avx2::rms_norm,
    .weighted_rows = avx2::weighted_rows,
    .sigmoid = avx2::sigmoid,
    .softmax = avx2::softmax,
    .silu_mul = avx2::silu_mul,
    .gelu_tanh_mul = avx2::gelu_tanh_mul,
    .rope = avx2::rope,
    .f32_to_f16_row = avx2::f32_to_f16_row,
    .f16_to_f32_row = avx2::f16_to_f32_row,
    .round_to_f16_row = avx2::round_to_f16_row,
    .delta_rule_step = avx2::delta_rule_step,
};

}  // namespace anelm::kernels
