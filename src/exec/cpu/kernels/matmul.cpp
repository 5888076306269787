// matmul: threading and cache blocking around the per-ISA leaves.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "exec/cpu/kernels/isa.h"

namespace anelm::kernels {

namespace {

// Up to this many tokens the weights are streamed once, row by row (memory
// bound); beyond, they are converted to f32 panels once and reused across all
// tokens by a register-blocked micro-kernel (compute bound).
constexpr int64_t gemv_max_tokens = 8;

// GEMM blocking: kc inputs per packed panel (a panel of nr outputs stays in L1),
// up to nc_max outputs per task (all its panels stay in L2), mc tokens per pass.
constexpr int64_t kc_max = 256;
constexpr int64_t nc_max = 256;
constexpr int64_t mc_max = 192;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Rows per matrix-vector task: about 64 KiB of weights (stays in L2 while the
// token groups reuse it), a multiple of 4, and enough tasks to balance threads.
int64_t gemv_rows_per_task(const Matrix& w, int n_threads) {
    const int64_t row_bytes = std::max<int64_t>(1, w.n_in * static_cast<int64_t>(dtype_size(w.dtype)));
    int64_t rows = std::max<int64_t>(4, (int64_t{64} << 10) / row_bytes);
    rows = std::min(rows, ceil_div(w.n_out, 4 * static_cast<int64_t>(n_threads)));
    return std::max<int64_t>(4, ceil_div(rows, 4) * 4);
}

void matmul_gemv(const Isa& isa, const Matrix& w, const float* x, int64_t n_tokens, float* y,
                 ThreadPool& pool) {
    const int64_t rows = gemv_rows_per_task(w, pool.size());
    pool.run(ceil_div(w.n_out, rows), [&](int64_t task, int) {
        const int64_t o0 = task * rows, o1 = std::min(w.n_out, o0 + rows);
        for (int64_t t0 = 0; t0 < n_tokens; t0 += isa.gemv_tokens) {
            const int64_t n = std::min<int64_t>(isa.gemv_tokens, n_tokens - t0);
            isa.gemv(w, x + t0 * w.n_in, n, o0, o1, y + t0 * w.n_out, w.n_out);
        }
    });
}

// A per-thread buffer of packed panels, 64-byte aligned.
float* panel_scratch(size_t n_floats) {
    thread_local std::vector<float> buffer;
    if (buffer.size() < n_floats + 16) buffer.resize(n_floats + 16);
    const auto addr = reinterpret_cast<uintptr_t>(buffer.data());
    return buffer.data() + ((64 - addr % 64) % 64) / sizeof(float);
}

void matmul_gemm(const Isa& isa, const Matrix& w, const float* x, int64_t n_tokens, float* y,
                 ThreadPool& pool) {
    const int64_t nr = isa.nr, mr = isa.mr;
    const int64_t n_threads = pool.size();
    // Output blocks of whole panels; fewer, larger ones reuse each token tile
    // more, but every thread needs a few to balance.
    const int64_t n_panels = ceil_div(w.n_out, nr);
    const int64_t panels_per_block =
        std::clamp<int64_t>(ceil_div(n_panels, 4 * n_threads), 1, nc_max / nr);
    const int64_t nc = panels_per_block * nr;
    const int64_t n_oblocks = ceil_div(w.n_out, nc);
    // Too few output blocks for the threads: split the tokens too.
    int64_t n_tblocks = 1;
    if (n_oblocks < 2 * n_threads) {
        n_tblocks = std::min(ceil_div(2 * n_threads, n_oblocks), ceil_div(n_tokens, mr));
    }
    const int64_t tb = ceil_div(ceil_div(n_tokens, n_tblocks), mr) * mr;
    n_tblocks = ceil_div(n_tokens, tb);
    const int64_t kc = std::min(kc_max, w.n_in);

    pool.run(n_oblocks * n_tblocks, [&](int64_t task, int) {
        const int64_t o_begin = (task / n_tblocks) * nc;
        const int64_t o_end = std::min(w.n_out, o_begin + nc);
        const int64_t t_begin = (task % n_tblocks) * tb;
        const int64_t t_end = std::min(n_tokens, t_begin + tb);
        float* panels = panel_scratch(static_cast<size_t>(nc * kc));
        for (int64_t k0 = 0; k0 < w.n_in; k0 += kc) {
            const int64_t k_len = std::min(kc, w.n_in - k0);
            for (int64_t o = o_begin; o < o_end; o += nr) {
                isa.pack_panel(w, o, std::min(nr, o_end - o), k0, k_len,
                               panels + (o - o_begin) * k_len);
            }
            for (int64_t t_chunk = t_begin; t_chunk < t_end; t_chunk += mc_max) {
                const int64_t t_chunk_end = std::min(t_end, t_chunk + mc_max);
                for (int64_t o = o_begin; o < o_end; o += nr) {
                    const float* panel = panels + (o - o_begin) * k_len;
                    for (int64_t t = t_chunk; t < t_chunk_end; t += mr) {
                        isa.gemm_tile(x + t * w.n_in + k0, w.n_in, std::min(mr, t_chunk_end - t),
                                      panel, k_len, y + t * w.n_out + o, w.n_out,
                                      std::min(nr, o_end - o), k0 > 0);
                    }
                }
            }
        }
    });
}

}  // namespace

void matmul(const Matrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
    const Isa* isa = active();
    if (!isa) return ref::matmul(w, x, n_tokens, y, pool);
    check_matrix(w);
    if (n_tokens <= 0 || w.n_out <= 0) return;
    if (w.n_in == 0) return std::fill(y, y + n_tokens * w.n_out, 0.0f);
    if (n_tokens <= gemv_max_tokens) {
        matmul_gemv(*isa, w, x, n_tokens, y, pool);
    } else {
        matmul_gemm(*isa, w, x, n_tokens, y, pool);
    }
}

}  // namespace anelm::kernels
