// NEON matmul leaves: vec_matmul.h's blocking with 8x12 GEMM tiles (24
// accumulators of 32 registers, the tokens as lanes of two); blocks of 8 rows
// for one token and 4 for 2-4 (up to 16 accumulators).
#include "kernels/arm/neon.h"
#include "kernels/vec_matmul.h"

namespace anelm::kernels::neon {

namespace {
using Leaves = VecMatmul<Vec, mr, nr, GemvShape{{8, 4, 4, 4}, false}>;
}  // namespace

void pack_panel(const Matrix& w, int64_t o0, int64_t n_rows, int64_t k0, int64_t kc, float* panel) {
    Leaves::pack_panel(w, o0, n_rows, k0, kc, panel);
}

void gemm_tile(const float* xp, int64_t m, const float* panel, int64_t kc, float* y, int64_t ldy,
               int64_t n, bool accumulate) {
    Leaves::gemm_tile(xp, m, panel, kc, y, ldy, n, accumulate);
}

void gemv(const Matrix& w, const float* x, int64_t n_tokens, int64_t o0, int64_t o1, float* y,
          int64_t ldy) {
    Leaves::gemv(w, x, n_tokens, o0, o1, y, ldy);
}

}  // namespace anelm::kernels::neon
