#include "lower/program_parts.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <string_view>

#include "base/error.h"

namespace anelm::lower {

namespace {

// The layer of a node named blk.N.*, or -1.
int64_t layer_of(std::string_view name) {
    if (!name.starts_with("blk.")) return -1;
    name.remove_prefix(4);
    int64_t n = -1;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
    if (ec != std::errc() || end == name.data() + name.size() || *end != '.') return -1;
    return n;
}

}  // namespace

ProgramParts split_parts(const ir::Function& fn) {
    ProgramParts parts;
    bool in_tail = false;
    bool norm_seen = false;
    for (size_t i = 0; i < fn.nodes.size(); ++i) {
        const ir::Node& node = fn.nodes[i];
        if (node.op == ir::Op::input) continue;
        const auto id = static_cast<ir::ValueId>(i);
        const int64_t layer = layer_of(node.name);
        if (layer >= 0) {
            if (in_tail || layer < static_cast<int64_t>(parts.layers.size()) - 1 ||
                layer > static_cast<int64_t>(parts.layers.size()))
                fail("{}: node {} of layer {} is out of layer order", fn.name, node.name, layer);
            if (layer == static_cast<int64_t>(parts.layers.size())) parts.layers.emplace_back();
            parts.layers.back().push_back(id);
        } else if (parts.layers.empty()) {
            parts.embedding.push_back(id);
        } else {
            in_tail = true;
            if (norm_seen) {
                parts.head.push_back(id);
            } else {
                parts.final_norm.push_back(id);
                norm_seen = node.op == ir::Op::rms_norm;
            }
        }
    }
    if (parts.layers.empty()) fail("{}: no layer nodes (blk.N.*)", fn.name);
    if (!norm_seen) fail("{}: no final norm after the last layer", fn.name);
    if (parts.head.empty()) fail("{}: nothing after the final norm", fn.name);
    return parts;
}

std::vector<ir::ValueId> part_inputs(const ir::Function& fn,
                                     const std::vector<ir::ValueId>& nodes) {
    const std::set<ir::ValueId> inside(nodes.begin(), nodes.end());
    std::vector<ir::ValueId> outside;
    for (ir::ValueId id : nodes)
        for (ir::ValueId in : fn.nodes[static_cast<size_t>(id)].inputs)
            if (!inside.contains(in) && fn.nodes[static_cast<size_t>(in)].op != ir::Op::input &&
                std::ranges::find(outside, in) == outside.end())
                outside.push_back(in);
    if (outside.empty())
        fail("{}: a part starting at {} reads nothing from before it", fn.name,
             fn.nodes[static_cast<size_t>(nodes.at(0))].name);
    return outside;
}

std::vector<ir::ValueId> part_outputs(const ir::Function& fn,
                                      const std::vector<ir::ValueId>& nodes) {
    const std::set<ir::ValueId> inside(nodes.begin(), nodes.end());
    std::set<ir::ValueId> used_after;
    for (size_t i = static_cast<size_t>(nodes.back()) + 1; i < fn.nodes.size(); ++i)
        for (ir::ValueId in : fn.nodes[i].inputs)
            if (inside.contains(in)) used_after.insert(in);
    for (ir::ValueId out : fn.outputs)
        if (inside.contains(out)) used_after.insert(out);
    return {used_after.begin(), used_after.end()};
}

ir::ValueId part_output(const ir::Function& fn, const std::vector<ir::ValueId>& nodes) {
    const std::vector<ir::ValueId> used_after = part_outputs(fn, nodes);
    if (used_after.size() != 1)
        fail("{}: a part ending at {} leaves {} values to what follows, expected one", fn.name,
             fn.nodes[static_cast<size_t>(nodes.back())].name, used_after.size());
    return used_after[0];
}

}  // namespace anelm::lower
