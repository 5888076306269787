#include "passes/fold_scales.h"

#include <map>
#include <tuple>
#include <vector>

#include "base/half.h"
#include "io/tensor_values.h"
#include "passes/fp16_scale.h"

namespace anelm::passes {

namespace {

// (offset + w) * scale as a new weight.
ir::Weight folded(const ir::Weight& w, float offset, float scale) {
    ir::Weight out;
    out.name = w.name;
    out.view = w.view;
    const int64_t n = w.view.numel();
    std::vector<float> values(static_cast<size_t>(n));
    read_f32(w.view, 0, n, values.data());
    if (w.view.dtype == DType::bf16 && offset == 0 && is_power_of_two(scale)) {
        auto data = std::make_shared<std::vector<uint16_t>>(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i)
            (*data)[static_cast<size_t>(i)] = f32_to_bf16(values[static_cast<size_t>(i)] * scale);
        out.view.data = reinterpret_cast<const std::byte*>(data->data());
        out.storage = std::move(data);
        return out;
    }
    for (float& v : values) v = (offset + v) * scale;
    auto data = std::make_shared<std::vector<float>>(std::move(values));
    out.view =
        TensorView{DType::f32, w.view.shape, reinterpret_cast<const std::byte*>(data->data())};
    out.storage = std::move(data);
    return out;
}

bool folds(ir::Op op) {
    return op == ir::Op::embed || op == ir::Op::linear || op == ir::Op::rms_norm;
}

}  // namespace

void fold_scales_into_weights(ir::Program& program) {
    std::map<std::tuple<ir::WeightId, float, float>, ir::WeightId> made;
    auto fold = [&](ir::WeightId id, float offset, float scale) {
        const auto key = std::make_tuple(id, offset, scale);
        if (const auto it = made.find(key); it != made.end()) return it->second;
        const ir::Weight& w = program.weights.at(static_cast<size_t>(id));
        program.weights.push_back(folded(w, offset, scale));
        const auto new_id = static_cast<ir::WeightId>(program.weights.size() - 1);
        made.emplace(key, new_id);
        return new_id;
    };
    for (ir::Function& fn : program.functions)
        for (ir::Node& node : fn.nodes) {
            if (!folds(node.op) || node.weight == ir::no_weight) continue;
            const float scale = node.attrs.out_scale;
            const float offset = node.op == ir::Op::rms_norm ? node.attrs.gain_offset : 0.0f;
            if (scale == 1.0f && offset == 0.0f) continue;
            if (program.weights.at(static_cast<size_t>(node.weight)).quantized) continue;
            if (node.bias != ir::no_weight &&
                program.weights.at(static_cast<size_t>(node.bias)).quantized)
                continue;
            node.weight = fold(node.weight, offset, scale);
            if (node.bias != ir::no_weight) node.bias = fold(node.bias, 0.0f, scale);
            node.attrs.out_scale = 1.0f;
            node.attrs.gain_offset = 0.0f;
        }
}

}  // namespace anelm::passes
