// How the ANE split sees a program: the nodes before the first layer (the
// embeddings), each layer's nodes (named blk.N.*), and the tail, split at the
// final norm (which runs in the last chunk) from the head after it.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/program.h"

namespace anelm::lower {

struct ProgramParts {
    std::vector<ir::ValueId> embedding;            // ops before layer 0
    std::vector<std::vector<ir::ValueId>> layers;  // per layer, in order
    std::vector<ir::ValueId> final_norm;           // the tail up to and including the final norm
    std::vector<ir::ValueId> head;                 // after it: the LM head and what follows
};

// Partitions a one-token function. Throws when the nodes do not follow that
// shape (a layer's nodes interleaved with another's, no norm in the tail).
ProgramParts split_parts(const ir::Function& fn);

// Every value computed before `nodes` that they read, the one the first node
// reads first (the hidden state entering a part, and what else the part reads).
std::vector<ir::ValueId> part_inputs(const ir::Function& fn, const std::vector<ir::ValueId>& nodes);
// The one value of `nodes` read after them: the hidden state leaving a part.
ir::ValueId part_output(const ir::Function& fn, const std::vector<ir::ValueId>& nodes);
// Every value of `nodes` read after them (Gemma 4's embeddings leave the
// hidden state and the per-layer inputs), in the order they were computed.
std::vector<ir::ValueId> part_outputs(const ir::Function& fn,
                                      const std::vector<ir::ValueId>& nodes);

}  // namespace anelm::lower
