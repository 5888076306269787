// The AVX-512 leaf table, chosen at run time by dispatch.cpp: the matmul and
// row kernels over the AVX-512 vector layer, and attention over int8 rows in
// VNNI's integer products. Attention over f16 rows and the weighted sum of
// rows stay AVX2's: over 16 lanes attention measured 3-5% slower on Zen 4
// (bench/README.md, "One blocking over a vector layer"), whose 512-bit units
// are two 256-bit halves; rotary embedding and the f16 conversions, a small
// share of a model's time, stay AVX2's too (every AVX-512 processor has AVX2).
#include "kernels/x86/avx2_leaves.h"
#include "kernels/x86_512/avx512.h"

namespace anelm::kernels {
namespace {

// The integer leaf with VNNI's products where the processor has them, else
// AVX2's integer leaf.
void attend_q8(const float* q, int64_t n_q, KvRows k, KvRows v, int64_t n_keys, int64_t head_dim,
               float scale, float* scores, float* out, float* lse) {
    static const auto leaf = has_avx512_vnni() ? avx512::attend_q8_vnni : avx2::attend_q8;
    leaf(q, n_q, k, v, n_keys, head_dim, scale, scores, out, lse);
}

}  // namespace

const Isa avx512_isa = {
    .name = "avx512",
    .mr = avx512::mr,
    .nr = avx512::nr,
    .pack_panel = avx512::pack_panel,
    .gemm_tile = avx512::gemm_tile,
    .gemv_tokens = avx512::gemv_tokens,
    .gemv = avx512::gemv,
    .attend = avx2::attend,
    .attend_q8 = attend_q8,
    .rms_norm = avx512::rms_norm,
    .weighted_rows = avx2::weighted_rows,
    .sigmoid = avx512::sigmoid,
    .softmax = avx512::softmax,
    .silu_mul = avx512::silu_mul,
    .gelu_tanh_mul = avx512::gelu_tanh_mul,
    .rope = avx2::rope,
    .f32_to_f16_row = avx2::f32_to_f16_row,
    .f16_to_f32_row = avx2::f16_to_f32_row,
    .round_to_f16_row = avx2::round_to_f16_row,
    .delta_rule_step = avx512::delta_rule_step,
};

}  // namespace anelm::kernels
