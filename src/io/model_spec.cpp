#include "io/model_spec.h"

namespace anelm {

namespace {

bool is_sliding(const ModelSpec& spec, int64_t il) {
    return static_cast<size_t>(il) < spec.sliding_layers.size() &&
           spec.sliding_layers[static_cast<size_t>(il)];
}

int64_t first_shared_layer(const ModelSpec& spec) {
    return spec.n_layer - spec.n_kv_shared_layers;
}

}  // namespace

int64_t layer_head_dim(const ModelSpec& spec, int64_t il) {
    return spec.global_head_dim > 0 && !is_sliding(spec, il) ? spec.global_head_dim : spec.head_dim;
}

int64_t layer_ff(const ModelSpec& spec, int64_t il) {
    const bool shared = spec.n_kv_shared_layers > 0 && il >= first_shared_layer(spec);
    return shared && spec.double_wide_mlp ? 2 * spec.n_ff : spec.n_ff;
}

int64_t kv_source_layer(const ModelSpec& spec, int64_t il) {
    const int64_t first = first_shared_layer(spec);
    if (spec.n_kv_shared_layers <= 0 || il < first) return il;
    for (int64_t j = first - 1; j >= 0; --j)
        if (is_sliding(spec, j) == is_sliding(spec, il)) return j;
    return il;  // no earlier layer of its kind: parse_hf_config refuses such a config
}

std::vector<int64_t> kv_head_dims(const ModelSpec& spec) {
    const auto marked = [](const std::vector<bool>& kinds, int64_t il) {
        return static_cast<size_t>(il) < kinds.size() && kinds[static_cast<size_t>(il)];
    };
    std::vector<int64_t> dims;
    for (int64_t il = 0; il < spec.n_layer; ++il) {
        if (marked(spec.conv_layers, il) || marked(spec.delta_layers, il)) continue;
        if (kv_source_layer(spec, il) == il) dims.push_back(layer_head_dim(spec, il));
    }
    return dims;
}

int64_t kv_values_per_position(const ModelSpec& spec) {
    int64_t n = 0;
    for (int64_t head_dim : kv_head_dims(spec)) n += 2 * spec.n_head_kv * head_dim;
    return n;
}

}  // namespace anelm
