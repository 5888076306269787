#include "passes/hidden_output.h"

#include "base/error.h"

namespace anelm::passes {

void hidden_output(ir::Function& fn) {
    for (size_t i = 0; i < fn.nodes.size(); ++i) {
        const ir::Node& n = fn.nodes[i];
        if (n.name != "output_norm") continue;
        if (!n.per_token) fail("{}: output_norm holds only the last token's row", fn.name);
        // Nothing before the norm reads what comes after it (execution order).
        fn.nodes.resize(i + 1);
        fn.outputs = {static_cast<ir::ValueId>(i)};
        return;
    }
    fail("{}: no output_norm node to read the hidden states from", fn.name);
}

}  // namespace anelm::passes
