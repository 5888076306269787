#include "ir/program.h"

#include "base/error.h"

namespace anelm::ir {

const Function& Program::function(const std::string& name) const {
    for (const auto& f : functions)
        if (f.name == name) return f;
    fail("program has no function {}", name);
}

WeightId Program::add_weight(std::string name, const TensorView& view) {
    for (size_t i = 0; i < weights.size(); ++i)
        if (weights[i].name == name) return static_cast<WeightId>(i);
    weights.push_back(Weight{std::move(name), view, nullptr, nullptr});
    return static_cast<WeightId>(weights.size() - 1);
}

std::vector<size_t> first_readers(const Program& program, const Function& fn) {
    std::vector<size_t> first(program.weights.size(), fn.nodes.size());
    for (size_t i = fn.nodes.size(); i-- > 0;)
        if (fn.nodes[i].weight != no_weight) first[static_cast<size_t>(fn.nodes[i].weight)] = i;
    return first;
}

}  // namespace anelm::ir
