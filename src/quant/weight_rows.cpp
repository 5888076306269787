#include "quant/weight_rows.h"

#include <algorithm>

#include "base/error.h"
#include "io/tensor_values.h"

namespace anelm::quant {

MatrixShape matrix_shape(const TensorView& w) {
    if (w.shape.size() < 2)
        fail("quantize: a tensor of rank {}, expected a matrix", w.shape.size());
    if (w.dtype != DType::f32 && w.dtype != DType::f16 && w.dtype != DType::bf16 &&
        w.dtype != DType::blocks)
        fail("quantize: dtype {}, expected f32, f16, bf16 or ggml blocks", dtype_name(w.dtype));
    return {w.shape[0], w.numel() / std::max<int64_t>(1, w.shape[0])};
}

void read_row(const TensorView& w, const MatrixShape& shape, int64_t o, float* out) {
    read_f32(w, o * shape.n_in, shape.n_in, out);
}

}  // namespace anelm::quant
