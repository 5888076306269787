// The NEON leaf table, the baseline on arm64.
#include "kernels/arm/neon.h"

namespace anelm::kernels {

const Isa neon_isa = {
    .name = "neon",
    .mr = neon::mr,
    .nr = neon::nr,
    .pack_panel = neon::pack_panel,
    .gemm_tile = neon::gemm_tile,
    .gemv_tokens = neon::gemv_tokens,
    .gemv = neon::gemv,
    .attend = neon::attend,
    .attend_q8 = neon::attend_q8,
    .rms_norm = neon::rms_norm,
    .weighted_rows = neon::weighted_rows,
    .sigmoid = neon::sigmoid,
    .softmax = neon::softmax,
    .silu_mul = neon::silu_mul,
    .gelu_tanh_mul = neon::gelu_tanh_mul,
    .rope = neon::rope,
    .f32_to_f16_row = neon::f32_to_f16_row,
    .f16_to_f32_row = neon::f16_to_f32_row,
    .round_to_f16_row = neon::round_to_f16_row,
    .delta_rule_step = neon::delta_rule_step,
};

}  // namespace anelm::kernels
