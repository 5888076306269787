// Rows of a weight tensor as f32, whatever its storage dtype.
#pragma once

#include <cstdint>

#include "base/tensor.h"

namespace anelm::quant {

struct MatrixShape {
    int64_t n_out = 0;
    int64_t n_in = 0;
};

// A weight of rank >= 2 as a matrix: the first dimension are the output
// channels, the rest (1x1 conv kernels included) flattened into the inputs.
// Throws for rank < 2 and for dtypes other than f32, f16, bf16 and blocks.
MatrixShape matrix_shape(const TensorView& w);

// out[i] = w[o, i] as f32, i < n_in.
void read_row(const TensorView& w, const MatrixShape& shape, int64_t o, float* out);

}  // namespace anelm::quant
