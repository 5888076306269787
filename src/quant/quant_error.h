// How far a quantized matrix is from the weight it came from.
#pragma once

#include <functional>

#include "base/tensor.h"
#include "base/thread_pool.h"
#include "quant/input_stats.h"
#include "quant/quantized_matrix.h"

namespace anelm::quant {

// Sums over the elements of W and its quantized Q; += pools several tensors.
struct QuantError {
    double sum_ww = 0, sum_qq = 0, sum_wq = 0, sum_dd = 0;  // W², Q², WQ, (W - Q)²
    double max_abs = 0;                                     // max |W - Q|

    double rel_rmse() const;  // ||W - Q|| / ||W|| (Frobenius)
    double cosine() const;    // <W, Q> / (||W|| ||Q||)
    QuantError& operator+=(const QuantError& other);
};

// Compares q row by row with w (same shape), in parallel; the sums are
// combined in a fixed order, so the result does not depend on the threads.
QuantError quant_error(const TensorView& w, const QuantizedMatrix& q, ThreadPool& pool);

// The same for w against w rounded to half precision (what a dense weight
// loses when written as f16).
QuantError half_rounding_error(const TensorView& w, ThreadPool& pool);

// The same for w against any stand-in for it: `row(o, out)` writes its row o
// (a file's copy read back, say); called from several threads at once.
QuantError stand_in_error(const TensorView& w, ThreadPool& pool,
                          const std::function<void(int64_t o, float* out)>& row);

// What the quantization changes in the layer's outputs on the calibration
// inputs: sum over rows o of (w_o - q_o) XᵀX (w_o - q_o)ᵀ, with the full Gram
// matrix where the statistics hold it and `terms` asks for it, else its
// diagonal (the expectation where the errors of a row's weights are
// independent, as nearest codes' are, for n_out * n_in work, not n_in times that).
enum class GramTerms { full, diagonal };
double output_error(const TensorView& w, const QuantizedMatrix& q, const InputStats& stats,
                    ThreadPool& pool, GramTerms terms = GramTerms::full);

}  // namespace anelm::quant
