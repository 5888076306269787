// Aiming a layer at the f32 model's outputs when its inputs come from layers
// already quantized. GPTQ on the quantized model's inputs X̃ minimises
// ‖(W − Ŵ) X̃‖: it keeps the layer as it is on inputs that have drifted. What
// the model needs is Ŵ X̃ near the f32 model's W X. The dense weight that
// comes nearest on the calibration rows is W' = W C (X̃ᵀX̃ + λI)⁻¹ with
// C = XᵀX̃, and ‖W X − Ŵ X̃‖² = ‖W X − W' X̃‖² + ‖(W' − Ŵ) X̃‖² (the residual
// of a least-squares fit is orthogonal to its inputs), so GPTQ on W' with the
// same X̃ᵀX̃ minimises the whole (as GPTAQ, Li et al. 2025, does per column).
#pragma once

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "quant/input_stats.h"

namespace anelm::quant {

// λ as a share of X̃ᵀX̃'s mean diagonal. Measured on stories260K (mean KL
// over five calibration texts): 0.001-0.003 best, 0.01 keeps three quarters
// of the gain, 0.1 loses to no correction at all.
constexpr double target_damping = 0.002;

// The fewest calibration rows per input the target is aimed with: fewer, and
// the map fits the calibration text rather than the model (stories260K's
// LUT4 KL at 64 and 172 inputs: 6 rows per input 7% worse than no target,
// 12 rows 19% better, 24 rows 22% better).
constexpr int64_t target_rows_per_input = 16;

// C = XᵀX̃ of one input: the f32 model's rows against the quantized model's.
struct CrossStats {
    explicit CrossStats(int64_t n);

    int64_t n_in = 0;
    std::vector<float> cross;  // [n_in, n_in]: C[i, j] = Σ_t x[t, i] x̃[t, j]

    // Adds rows of x and xq (both f32 [rows, n_in], the same tokens).
    void add(const float* x, const float* xq, int64_t n_rows, ThreadPool& pool);
};

// Pᵀ for P = (C + λI)(X̃ᵀX̃ + λI)⁻¹ [n_in, n_in]; `quantized` holds X̃ᵀX̃
// (has_gram). The λ on both sides keeps the weights as they are in the
// directions the calibration rows hardly visit (a ridge towards W, not 0):
// with fewer rows than inputs, a plain least-squares W' would drop them.
std::vector<float> target_map(const CrossStats& cross, const InputStats& quantized,
                              ThreadPool& pool);

// w = w P in place, w f32 [n_out, n_in], from Pᵀ.
void retarget(std::vector<float>& w, int64_t n_out, const std::vector<float>& map_t,
              ThreadPool& pool);

}  // namespace anelm::quant
