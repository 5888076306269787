// matmul: threading and cache blocking around the per-ISA leaves.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "base/error.h"
#include "kernels/gemv_split.h"
#include "kernels/isa.h"
#include "kernels/tile_packing.h"

namespace anelm::kernels {

namespace {

// GEMM blocking: kc inputs per packed panel, up to nc_max outputs per task (all
// its panels, at most 1 MiB of f32, stay in L2), chunks of mc tokens that stay
// in L2 while every panel of the task passes over them. Fewer, longer k blocks
// pass over the tokens fewer times: 1024 inputs ran prompts 6-13% faster than
// 256 (bench/README.md, "Prompts: longer k blocks").
constexpr int64_t kc_max = 1024;
constexpr int64_t nc_max = 256;
constexpr int64_t mc_max = 48;
// Tokens per GEMM pass: their packed copy stays a few MiB, and the weights are
// still converted only once per 512 tokens.
constexpr int64_t tokens_per_pass = 512;

int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

void matmul_gemv(const Isa& isa, const Matrix& w, const float* x, int64_t n_tokens, float* y,
                 ThreadPool& pool) {
    const GemvSplit split = gemv_split(w.n_out, w.n_in * static_cast<int64_t>(dtype_size(w.dtype)),
                                       n_tokens, isa.gemv_tokens, pool.size());
    pool.run(split.n_tasks(), [&](int64_t task, int) {
        const int64_t o0 = split.begin(task), o1 = split.begin(task + 1);
        for (int64_t t0 = 0; t0 < n_tokens; t0 += isa.gemv_tokens) {
            const int64_t n = std::min<int64_t>(isa.gemv_tokens, n_tokens - t0);
            isa.gemv(w, x + t0 * w.n_in, n, o0, o1, y + t0 * w.n_out, w.n_out);
        }
    });
}

// One blocked GEMM over up to tokens_per_pass tokens. The tokens are packed once
// into tiles shared by all tasks; each task converts its weight panels once per
// k block and runs them against every tile.
void gemm_pass(const Isa& isa, const Matrix& w, const float* x, int64_t n_tokens, float* y,
               ThreadPool& pool) {
    const int64_t nr = isa.nr, mr = isa.mr, n_in = w.n_in;
    const int64_t n_threads = pool.size();

    thread_local std::vector<float> token_buffer;
    const int64_t n_tiles = ceil_div(n_tokens, mr);
    float* tokens = aligned_scratch(token_buffer, n_tiles * mr * n_in);
    pool.run(n_tiles, [&](int64_t tile, int) {
        pack_tokens(x + tile * mr * n_in, n_in, std::min(mr, n_tokens - tile * mr), mr,
                    tokens + tile * mr * n_in);
    });

    // Output blocks of whole panels; fewer, larger ones reuse each token tile
    // more, but every thread needs a few to balance.
    const int64_t n_panels = ceil_div(w.n_out, nr);
    const int64_t panels_per_block =
        std::clamp<int64_t>(ceil_div(n_panels, 4 * n_threads), 1, nc_max / nr);
    const int64_t nc = panels_per_block * nr;
    const int64_t n_oblocks = ceil_div(w.n_out, nc);
    // Too few output blocks for the threads: split the tiles too.
    int64_t n_tblocks = 1;
    if (n_oblocks < 2 * n_threads)
        n_tblocks = std::min(ceil_div(2 * n_threads, n_oblocks), n_tiles);
    const int64_t tiles_per_block = ceil_div(n_tiles, n_tblocks);
    n_tblocks = ceil_div(n_tiles, tiles_per_block);
    const int64_t kc = std::min(kc_max, n_in);
    const int64_t tiles_per_chunk = std::max<int64_t>(1, mc_max / mr);

    pool.run(n_oblocks * n_tblocks, [&](int64_t task, int) {
        const int64_t o_begin = (task / n_tblocks) * nc;
        const int64_t o_end = std::min(w.n_out, o_begin + nc);
        const int64_t tile_begin = (task % n_tblocks) * tiles_per_block;
        const int64_t tile_end = std::min(n_tiles, tile_begin + tiles_per_block);
        thread_local std::vector<float> panel_buffer;
        float* panels = aligned_scratch(panel_buffer, nc * kc);
        for (int64_t k0 = 0; k0 < n_in; k0 += kc) {
            const int64_t k_len = std::min(kc, n_in - k0);
            for (int64_t o = o_begin; o < o_end; o += nr) {
                isa.pack_panel(w, o, std::min(nr, o_end - o), k0, k_len,
                               panels + (o - o_begin) * k_len);
            }
            // Token tiles in chunks that stay in L2 while every panel passes over them.
            for (int64_t chunk = tile_begin; chunk < tile_end; chunk += tiles_per_chunk) {
                const int64_t chunk_end = std::min(tile_end, chunk + tiles_per_chunk);
                for (int64_t o = o_begin; o < o_end; o += nr) {
                    const float* panel = panels + (o - o_begin) * k_len;
                    for (int64_t tile = chunk; tile < chunk_end; ++tile) {
                        const int64_t t = tile * mr;
                        isa.gemm_tile(tokens + t * n_in + k0 * mr, std::min(mr, n_tokens - t),
                                      panel, k_len, y + t * w.n_out + o, w.n_out,
                                      std::min(nr, o_end - o), k0 > 0);
                    }
                }
            }
        }
    });
}

void matmul_gemm(const Isa& isa, const Matrix& w, const float* x, int64_t n_tokens, float* y,
                 ThreadPool& pool) {
    for (int64_t t0 = 0; t0 < n_tokens; t0 += tokens_per_pass) {
        gemm_pass(isa, w, x + t0 * w.n_in, std::min(tokens_per_pass, n_tokens - t0),
                  y + t0 * w.n_out, pool);
    }
}

}  // namespace

namespace {

// The product, streaming the rows up to gemv_tokens tokens, else the GEMM.
void matmul_from(int64_t gemv_tokens, const Matrix& w, const float* x, int64_t n_tokens, float* y,
                 ThreadPool& pool) {
    const Isa* isa = active();
    if (!isa) return ref::matmul(w, x, n_tokens, y, pool);
    check_matrix(w);
    if (n_tokens <= 0 || w.n_out <= 0) return;
    if (w.n_in == 0) return std::fill(y, y + n_tokens * w.n_out, 0.0f);
    if (n_tokens <= gemv_tokens) {
        matmul_gemv(*isa, w, x, n_tokens, y, pool);
    } else {
        matmul_gemm(*isa, w, x, n_tokens, y, pool);
    }
}

}  // namespace

void matmul(const Matrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
    matmul_from(gemv_max_tokens, w, x, n_tokens, y, pool);
}

void matmul_cached(const Matrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
    matmul_from(cached_gemv_max_tokens, w, x, n_tokens, y, pool);
}

void matvec_stacked(const std::vector<Matrix>& ws, const float* x, const std::vector<float*>& ys,
                    ThreadPool& pool) {
    const Isa* isa = active();
    int64_t n_out = 0;
    for (const Matrix& w : ws) {
        check_matrix(w);
        if (w.dtype != ws[0].dtype || w.n_in != ws[0].n_in)
            fail("matvec_stacked: matrices of different dtypes or widths");
        n_out += w.n_out;
    }
    if (!isa || ws.empty() || ws[0].n_in == 0) {
        for (size_t k = 0; k < ws.size(); ++k) matmul(ws[k], x, 1, ys[k], pool);
        return;
    }
    const int64_t row_bytes = ws[0].n_in * static_cast<int64_t>(dtype_size(ws[0].dtype));
    const GemvSplit split = gemv_split(n_out, row_bytes, 1, isa->gemv_tokens, pool.size());
    pool.run(split.n_tasks(), [&](int64_t task, int) {
        const int64_t o0 = split.begin(task), o1 = split.begin(task + 1);
        int64_t first = 0;  // stacked index of matrix k's row 0
        for (size_t k = 0; k < ws.size() && first < o1; first += ws[k++].n_out) {
            const int64_t lo = std::max(o0, first), hi = std::min(o1, first + ws[k].n_out);
            if (lo < hi) isa->gemv(ws[k], x, 1, lo - first, hi - first, ys[k], ws[k].n_out);
        }
    });
}

}  // namespace anelm::kernels
