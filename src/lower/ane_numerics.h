// Rewrites the ANE lowering applies against the Neural Engine's fp16 failure
// modes (the reference notes' DeltaNet findings: about half the DeltaNet
// output was wrong before them, while the text still read fluently). Each is a
// switch so that a test can show what it fixes.
#pragma once

#include "ir/program.h"

namespace anelm::lower {

struct AneNumerics {
    // silu(x) as 0.5 x (1 + tanh(x / 2)): the native silu is off by about 1e-3
    // near 0, and the compiler fuses x * sigmoid(x) back into it. Applied in
    // the models with conv or delta-rule states, where it was measured; the
    // transformers keep the x * sigmoid(x) that ANEMLL's packages ship with,
    // which rounds better in fp16 for negative x.
    bool tanh_silu = true;
    // softplus(x) as max(x, 0) + log(1 + exp(-|x|)): the fp16 softplus, and
    // log(1 + exp(x)) written out (the form when off), overflow above x of
    // about 11.
    bool stable_softplus = true;
    // The delta rule's queries and values multiplied by these, the output
    // divided by their product: the state's small products stay out of fp16's
    // subnormals, which the ANE flushes to zero. 1 and 1: off.
    float delta_q_boost = ir::delta_query_boost;
    float delta_v_boost = ir::delta_state_boost;
};

}  // namespace anelm::lower
