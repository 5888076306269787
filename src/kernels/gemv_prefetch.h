// How the gemv leaves stream their rows: which rows go alone, and how far
// ahead blocks of rows are prefetched. Shared by files compiled with different
// instruction-set flags, so it has internal linkage: no ISA-specific copy can
// stand in for another.
#pragma once

#include <cstdint>

namespace anelm::kernels {

// The longest row (in inputs) that a one-token product reads alone, one row
// after another: its f32 x (16 KiB) stays in L1 beside the streamed weights.
// Longer rows go in blocks that load x once for several rows.
static constexpr int64_t gemv_row_max_inputs = 4096;

// Elements ahead of the read position, counted along a row, that each of
// `rows` rows streamed together (n_in elements of elem_bytes each) is
// prefetched. A block of short rows ends before the hardware prefetchers ramp
// up, so the next block is fetched while this one is read; long rows are
// fetched 512 bytes ahead, a distance that served every host measured while
// 1 KiB fell behind no prefetch on some (bench/README.md, "Decode: prefetching
// long rows" and "Decode: long rows, a shorter prefetch").
static constexpr int64_t gemv_prefetch_ahead(int rows, int64_t n_in, int64_t elem_bytes) {
    return rows * n_in * elem_bytes <= 16384 ? n_in : 512 / elem_bytes;
}

// What row 0 of a block of `rows` rows prefetches while element i is read:
// `ahead` (at most n_in) elements on in the row, or, past the row's end, as
// far into the first row of the next block, so the start of each row is in
// flight when the block reaches it. Row r prefetches r * n_in further on.
template <class E>
static inline const E* gemv_prefetch_at(const E* block, int rows, int64_t n_in, int64_t i,
                                        int64_t ahead) {
    const int64_t at = i + ahead;
    return at < n_in ? block + at : block + rows * n_in + (at - n_in);
}

}  // namespace anelm::kernels
