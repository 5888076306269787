// The factor of an inverse Gram matrix that GPTQ's error feedback reads:
// the upper triangular U with (XᵀX + damping)⁻¹ = UᵀU.
#pragma once

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"

namespace anelm::quant {

// The share of the mean diagonal added to the diagonal before factoring, as
// GPTQ does: it keeps the factor well conditioned where inputs are correlated
// or rarely active.
constexpr double gptq_damping = 0.01;

// The mean of gram's diagonal (1 where it is not positive): what the
// dampings below are shares of.
double mean_diagonal(const std::vector<float>& gram, int64_t n);

// U (f32 [n, n], row-major, zero below the diagonal) for the Gram matrix
// gram (f32 [n, n], symmetric), damped by `damping` of its mean diagonal.
// Inputs calibration never saw active (a zero diagonal) count as
// independent of the rest. Throws Error when the damped
// matrix is still not positive definite (non-finite statistics).
std::vector<float> inverse_gram_factor(const std::vector<float>& gram, int64_t n, ThreadPool& pool,
                                       double damping = gptq_damping);

// In place: the lower Cholesky factor L (L Lᵀ = a) of a (f32 [n, n],
// symmetric positive definite; only its lower triangle is read); the upper
// triangle is set to zero. False when a is not positive definite.
bool cholesky_lower(std::vector<float>& a, int64_t n, ThreadPool& pool);

// The inverse of a lower triangular l (f32 [n, n]), lower triangular.
std::vector<float> lower_inverse(const std::vector<float>& l, int64_t n, ThreadPool& pool);

}  // namespace anelm::quant
