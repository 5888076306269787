// How the matrix-vector products split a matrix's rows into tasks; shared by
// the dense and the quantized dispatch.
#pragma once

#include <algorithm>
#include <cstdint>

namespace anelm::kernels {

// Rows per task, a multiple of 8 (the leaves' row blocks), for n_out rows of
// row_bytes read by leaves that take up to tokens_per_pass tokens at once.
// Read once (one pass), the rows go in two long runs per thread: short
// interleaved tasks restart the hardware prefetchers every few KiB and cost a
// third of the bandwidth (bench/README.md, "Decode: long runs of rows"), while
// two runs each still let a thread that ends early take over. Reread by
// several passes, tasks of about 64 KiB stay in L2 between them.
inline int64_t gemv_rows_per_task(int64_t n_out, int64_t row_bytes, int64_t n_tokens,
                                  int64_t tokens_per_pass, int n_threads) {
    const auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
    const int64_t n = n_threads;
    int64_t rows = ceil_div(n_out, 2 * n);
    if (n_tokens > tokens_per_pass) {
        rows =
            std::min((int64_t{64} << 10) / std::max<int64_t>(1, row_bytes), ceil_div(n_out, 4 * n));
    }
    return std::max<int64_t>(8, ceil_div(rows, 8) * 8);
}

}  // namespace anelm::kernels
