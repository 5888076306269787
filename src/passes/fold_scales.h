// Folds the constants an op applies to its weights into the weights themselves:
// a node's out_scale (the FP16 residual scaling) on embed, linear and rms_norm,
// and an rms_norm's gain offset (Gemma's 1 + w). The CPU then rounds the very
// values the Core ML writer rounds: (offset + w) * scale, to half precision
// once, so a gain of 100,000 scaled by 1/4 is finite in both (rounding w first
// would overflow on the CPU only).
#pragma once

#include "ir/program.h"

namespace anelm::passes {

// Each distinct (weight, offset, scale) becomes one weight, shared by the
// nodes that read it so (prefill and decode, or tied embeddings scaled alike).
// bf16 and f32 weights scaled by a power of two keep their type (exact); the
// rest (ggml blocks too) become f32. Quantized weights are left as they are.
void fold_scales_into_weights(ir::Program& program);

}  // namespace anelm::passes
