// How far a quantized matrix is from the weight it came from.
#pragma once

#include "base/tensor.h"
#include "base/thread_pool.h"
#include "quant/quantized_matrix.h"

namespace anelm::quant {

struct QuantError {
    double rel_rmse = 0;  // ||W - Q|| / ||W|| (Frobenius)
    double cosine = 1;    // <W, Q> / (||W|| ||Q||) over all elements
    double max_abs = 0;   // max |W - Q|
};

// Compares q row by row with w (same shape), in parallel; the sums are
// combined in a fixed order, so the result does not depend on the threads.
QuantError quant_error(const TensorView& w, const QuantizedMatrix& q, ThreadPool& pool);

}  // namespace anelm::quant
