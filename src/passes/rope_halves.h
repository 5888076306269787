// Rotary embedding in the half-split form. llama2.c checkpoints rotate
// interleaved pairs (2i, 2i + 1); Hugging Face models and the ANE lowering
// rotate (i, i + head_dim / 2). Reordering each head's rows of the q and k
// projections (evens first, then odds) turns one form into the other: the
// rotation then pairs the same numbers, and attention's dot products are the
// same sums in another order, so the outputs do not change.
#pragma once

#include "ir/program.h"

namespace anelm::passes {

// Rewrites every interleaved rotary table of the program to the half-split
// form by permuting the rows (and biases) of the linear weights that feed its
// rope nodes. Throws Error naming the node when a rope's input is not a linear
// read by that rope alone, or when a weight is quantized (run this first).
void rope_halves(ir::Program& program);

}  // namespace anelm::passes
