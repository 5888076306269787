#include "passes/rope_halves.h"

#include <cstring>
#include <set>

#include "base/error.h"

namespace anelm::passes {

namespace {

// Rows of each head of head_dim rows: even offsets first, then odd ones.
void permute_rows(ir::Weight& w, int64_t head_dim) {
    if (w.quantized) fail("{}: quantized before its rope rows could be reordered", w.name);
    const int64_t rows = w.view.shape.at(0);
    if (rows % head_dim != 0 || head_dim % 2 != 0)
        fail("{}: {} rows are not whole heads of {}", w.name, rows, head_dim);
    const size_t row_bytes = w.view.n_bytes() / static_cast<size_t>(rows);  // ggml blocks too
    auto out = std::make_shared<std::vector<std::byte>>(static_cast<size_t>(rows) * row_bytes);
    const int64_t half = head_dim / 2;
    for (int64_t h = 0; h < rows / head_dim; ++h)
        for (int64_t j = 0; j < head_dim; ++j) {
            const int64_t from = h * head_dim + (j < half ? 2 * j : 2 * (j - half) + 1);
            std::memcpy(out->data() + static_cast<size_t>(h * head_dim + j) * row_bytes,
                        w.view.data + static_cast<size_t>(from) * row_bytes, row_bytes);
        }
    w.view.data = out->data();
    w.storage = std::move(out);
}

}  // namespace

void rope_halves(ir::Program& program) {
    std::set<int32_t> interleaved;
    for (size_t r = 0; r < program.ropes.size(); ++r)
        if (program.ropes[r].interleaved) interleaved.insert(static_cast<int32_t>(r));
    if (interleaved.empty()) return;
    std::set<ir::WeightId> permuted;
    for (const ir::Function& fn : program.functions) {
        std::vector<int> readers(fn.nodes.size(), 0);
        for (const ir::Node& node : fn.nodes)
            for (ir::ValueId in : node.inputs) ++readers[static_cast<size_t>(in)];
        for (const ir::Node& node : fn.nodes) {
            if (node.op != ir::Op::rope || !interleaved.contains(node.attrs.rope)) continue;
            const ir::Node& src = fn.nodes.at(static_cast<size_t>(node.inputs.at(0)));
            if (src.op != ir::Op::linear || readers[static_cast<size_t>(node.inputs[0])] != 1)
                fail("{}: {} reads {}, which is not a linear read by it alone", fn.name, node.name,
                     src.name);
            for (ir::WeightId w : {src.weight, src.bias})
                if (w != ir::no_weight && permuted.insert(w).second)
                    permute_rows(program.weights[static_cast<size_t>(w)], node.attrs.head_dim);
        }
    }
    for (int32_t r : interleaved) program.ropes[static_cast<size_t>(r)].interleaved = false;
}

}  // namespace anelm::passes
