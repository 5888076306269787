// A tensor's values as f32, whatever it is stored as: f32, f16, bf16 or a
// GGUF's ggml blocks, which are decoded only where read, so a quantized file
// never needs a dequantized copy of a whole model.
#pragma once

#include <cstdint>

#include "base/tensor.h"

namespace anelm {

// out[0..n) = elements [begin, begin + n) of w in row-major order. Throws
// Error for a dtype that holds no floats (integers, bool) or a range outside w.
void read_f32(const TensorView& w, int64_t begin, int64_t n, float* out);

}  // namespace anelm
