// AVX2 matmul leaves: vec_matmul.h's blocking with 6x16 GEMM tiles; a
// one-token product reads short rows one at a time, and blocks of 8, 4, 2 and
// 2 rows for 1-4 tokens (eight accumulators of the 16 registers).
#include "kernels/vec_matmul.h"
#include "kernels/x86/avx2.h"

namespace anelm::kernels::avx2 {

namespace {
using Leaves = VecMatmul<Vec, mr, nr, GemvShape{{8, 4, 2, 2}, true}>;
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

}  // namespace anelm::kernels::avx2
