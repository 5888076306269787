// How the matrix-vector products split a matrix's rows into tasks; shared by
// the dense and the quantized dispatch.
#pragma once

#include <algorithm>
#include <cstdint>

namespace anelm::kernels {

// Up to this many tokens a product streams the weight rows, a few tokens per
// pass, each task's rows staying in L2 between passes; beyond, the GEMM
// converts the weights to f32 panels once and reuses them across all tokens.
// The conversion only pays for itself past 64 tokens: at 16-64 the passes ran
// 1.1-2x faster and whole prompts 25-75% (bench/README.md, "Prompts of a few
// dozen tokens").
constexpr int64_t gemv_max_tokens = 64;
// Weights already in cache (matmul_cached) go to the GEMM sooner: streaming
// them gains nothing, and f32 panels need no conversion.
constexpr int64_t cached_gemv_max_tokens = 16;

// Tasks over n_out rows: n_head long runs of head_rows (n_head * head_rows <=
// n_out), then tail tasks of tail_rows (the last one shorter). Task k covers
// [begin(k), begin(k + 1)).
struct GemvSplit {
    int64_t n_out = 0;
    int64_t n_head = 0;
    int64_t head_rows = 0;
    int64_t tail_rows = 8;

    int64_t n_tasks() const {
        return n_head + (n_out - n_head * head_rows + tail_rows - 1) / tail_rows;
    }
    int64_t begin(int64_t task) const {
        const int64_t b =
            task < n_head ? task * head_rows : n_head * head_rows + (task - n_head) * tail_rows;
        return std::min(b, n_out);
    }
};

// The split for n_out rows of row_bytes read by leaves that take up to
// tokens_per_pass tokens at once. Read once (one pass), each thread starts on
// one long run of seven eighths of its share: short interleaved tasks restart
// the hardware prefetchers every few KiB and cost a third of the bandwidth
// (bench/README.md, "Decode: long runs of rows"). The last eighth goes in
// two pieces per thread to whichever thread is free, so a thread the rest of
// the machine slows holds the others up by one piece at most; more, shorter
// pieces restarted the streams more often for no better balance
// ("Decode: fewer tail pieces"). Reread by several passes, tasks of about
// 64 KiB stay in L2 between them.
inline GemvSplit gemv_split(int64_t n_out, int64_t row_bytes, int64_t n_tokens,
                            int64_t tokens_per_pass, int n_threads) {
    const auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
    const auto rows8 = [](int64_t r) { return std::max<int64_t>(8, (r + 7) / 8 * 8); };
    const int64_t n = n_threads;
    GemvSplit s;
    s.n_out = n_out;
    if (n_tokens > tokens_per_pass) {
        s.tail_rows = rows8(std::min((int64_t{64} << 10) / std::max<int64_t>(1, row_bytes),
                                     ceil_div(n_out, 4 * n)));
        return s;
    }
    constexpr int64_t tail_pieces_per_thread = 2;
    s.head_rows = rows8(n_out * 7 / (8 * n));
    s.n_head = std::min(n, n_out / s.head_rows);
    const int64_t rest = std::max<int64_t>(1, n_out - s.n_head * s.head_rows);
    s.tail_rows = rows8(ceil_div(rest, tail_pieces_per_thread * n));
    return s;
}

}  // namespace anelm::kernels
