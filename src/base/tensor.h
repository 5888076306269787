// A view of tensor data owned elsewhere (a mapped file or a buffer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/dtype.h"

namespace anelm {

struct TensorView {
    DType dtype = DType::f32;
    std::vector<int64_t> shape;  // row-major, outermost first
    const std::byte* data = nullptr;
    // DType::blocks: the ggml type id (io/ggml_types.h) and its block geometry.
    // Rows (the innermost dimension) are whole blocks.
    uint32_t block_type = 0;
    int64_t block_elems = 0;
    int64_t block_bytes = 0;

    int64_t numel() const {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        return n;
    }
    size_t n_bytes() const {
        if (dtype == DType::blocks) return static_cast<size_t>(numel() / block_elems * block_bytes);
        return static_cast<size_t>(numel()) * dtype_size(dtype);
    }
};

}  // namespace anelm
