// Embeddings read a model's hidden states: the final norm's output for every
// token, before the LM head turns it into logits.
#pragma once

#include "ir/program.h"

namespace anelm::passes {

// Makes the node named `output_norm` the function's output and drops what
// follows it (the head, a softcap). The function must keep every token's row
// (built with all_logits), so the output is f32 [tokens, n_embd]. Throws Error
// naming the function when it has no such per-token node.
void hidden_output(ir::Function& fn);

}  // namespace anelm::passes
