// How far ahead the dense gemv leaves prefetch the rows they stream. Shared by
// files compiled with different instruction-set flags, so it has internal
// linkage: no ISA-specific copy can stand in for another.
#pragma once

#include <cstdint>

namespace anelm::kernels {

// Elements ahead of the read position that each of `rows` rows streamed
// together (n_in elements of elem_bytes each) is prefetched. A block of short
// rows ends before the hardware prefetchers ramp up, so the next block is
// fetched while this one is read; long rows are fetched 1 KiB ahead in each
// row, which keeps more lines in flight than the hardware alone does
// (bench/README.md, "Decode: prefetching long rows").
static constexpr int64_t gemv_prefetch_ahead(int rows, int64_t n_in, int64_t elem_bytes) {
    return rows * n_in * elem_bytes <= 16384 ? rows * n_in : 1024 / elem_bytes;
}

}  // namespace anelm::kernels
