#include "runtime/private_weights.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>

#include "base/page_buffer.h"

namespace anelm {

namespace {

constexpr size_t weight_alignment = 4096;

size_t padded(size_t bytes) {
    return (bytes + weight_alignment - 1) / weight_alignment * weight_alignment;
}
// Small enough that the mapped pages still resident while being copied stay
// a few MiB, large enough that each task is mostly memcpy.
constexpr size_t chunk_bytes = size_t{8} << 20;

struct Piece {
    const std::byte* from;
    std::byte* to;
    size_t bytes;
};

}  // namespace

void copy_streamed_weights(ir::Program& program, const WeightStore& source, ThreadPool& pool) {
    std::set<ir::WeightId> streamed;
    for (const ir::Function& fn : program.functions)
        for (const ir::Node& node : fn.nodes) {
            if (node.op != ir::Op::linear) continue;
            const ir::Weight& w = program.weights[static_cast<size_t>(node.weight)];
            if (!w.quantized && !w.storage) streamed.insert(node.weight);
        }
    if (streamed.empty()) return;

    auto bytes_of = [&](ir::WeightId id) {
        return program.weights[static_cast<size_t>(id)].view.n_bytes();
    };
    size_t total = 0;
    for (ir::WeightId id : streamed) total += padded(bytes_of(id));
    auto buffer = std::make_shared<const PageBuffer>(total);

    std::vector<Piece> pieces;
    size_t at = 0;
    for (ir::WeightId id : streamed) {
        ir::Weight& w = program.weights[static_cast<size_t>(id)];
        const size_t n = bytes_of(id);
        for (size_t done = 0; done < n; done += chunk_bytes)
            pieces.push_back(
                {w.view.data + done, buffer->data() + at + done, std::min(chunk_bytes, n - done)});
        w.view.data = buffer->data() + at;
        w.storage = buffer;
        at += padded(n);
    }
    pool.run(static_cast<int64_t>(pieces.size()), [&](int64_t task, int) {
        const Piece& p = pieces[static_cast<size_t>(task)];
        std::memcpy(p.to, p.from, p.bytes);
        source.release({p.from, p.bytes});
    });
}

}  // namespace anelm
