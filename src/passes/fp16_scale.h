// FP16 residual scaling: the residual stream of a decoder grows through the
// layers past half precision's range (65,504) in some models. Multiplying the
// stream by α < 1 keeps it in range and leaves the logits unchanged, because
// every reader of the stream is a normalisation (or the next residual add).
#pragma once

#include <cstdint>

#include "ir/program.h"

namespace anelm::passes {

// The largest finite IEEE half value.
constexpr double f16_max = 65504.0;

// True for 2^k (the scales folding keeps exact).
bool is_power_of_two(float x);

// The scale for a residual stream whose measured peak |value| is `peak`:
// 1 when the peak is not within 4x of f16_max (nothing at risk), otherwise
// the largest power of two not above target / peak. A power of two, so that
// scaling weights and epsilons by it is exact in binary floating point.
float residual_scale_for_peak(double peak, double target = 32768.0);

// Scales the residual stream of every function by alpha (a power of two):
// the embedding output and every branch that adds into the stream get
// out_scale *= alpha, and each rms_norm reading the stream gets eps *= alpha^2,
// so its output is unchanged: (αx) / sqrt(mean((αx)^2) + α²eps) = x / sqrt(mean(x^2) + eps).
// The stream is the embedding's output and everything an add, last_row or
// scale computes from it. Throws Error naming the node when the program reads
// the stream through any other op, or when a branch is shared with other
// readers, since neither could be scaled exactly. Then the scales (and
// Gemma's gain offsets) are folded into the weights (fold_scales.h), so the
// CPU and the Core ML writer round the same values; alpha 1 folds only those.
void scale_residual(ir::Program& program, float alpha);

}  // namespace anelm::passes
