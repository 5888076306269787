#include "quant/weight_rows.h"

#include <algorithm>

#include "base/error.h"
#include "base/half.h"

namespace anelm::quant {

MatrixShape matrix_shape(const TensorView& w) {
    if (w.shape.size() < 2)
        fail("quantize: a tensor of rank {}, expected a matrix", w.shape.size());
    if (w.dtype != DType::f32 && w.dtype != DType::f16 && w.dtype != DType::bf16)
        fail("quantize: dtype {}, expected f32, f16 or bf16", dtype_name(w.dtype));
    return {w.shape[0], w.numel() / std::max<int64_t>(1, w.shape[0])};
}

void read_row(const TensorView& w, const MatrixShape& shape, int64_t o, float* out) {
    const int64_t begin = o * shape.n_in;
    if (w.dtype == DType::f32) {
        const auto* p = reinterpret_cast<const float*>(w.data) + begin;
        std::copy(p, p + shape.n_in, out);
        return;
    }
    const auto* p = reinterpret_cast<const uint16_t*>(w.data) + begin;
    if (w.dtype == DType::f16) {
        for (int64_t i = 0; i < shape.n_in; ++i) out[i] = f16_to_f32(p[i]);
    } else {
        for (int64_t i = 0; i < shape.n_in; ++i) out[i] = bf16_to_f32(p[i]);
    }
}

}  // namespace anelm::quant
