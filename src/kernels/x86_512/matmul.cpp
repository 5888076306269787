// AVX-512 matmul leaves: vec_matmul.h's blocking with 8x48 GEMM tiles; a
// one-token product reads short rows one at a time, and blocks of 8, 8, 4 and
// 4 rows for 1-4 tokens; 5-8 tokens (a verify pass) in one call, each block of
// four rows read for four tokens, then from L1 for the rest.
// GCC 12's AVX-512 headers start some intrinsics from a self-initialised
// "undefined" vector, which its uninitialised-use warnings flag once inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/vec_matmul.h"
#include "kernels/x86_512/avx512.h"

namespace anelm::kernels::avx512 {

namespace {
constexpr GemvShape shape{{8, 8, 4, 4}, true, 8};
static_assert(shape.tokens == gemv_tokens);
using Leaves = VecMatmul<Vec, mr, nr, shape>;
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

}  // namespace anelm::kernels::avx512
