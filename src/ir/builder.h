// The vocabulary model code is written in: each call appends one named node to
// a function and returns its value.
#pragma once

#include <string>
#include <string_view>

#include "io/weight_store.h"
#include "ir/program.h"

namespace anelm::ir {

class Builder {
public:
    Builder(Program& program, Function& function, const WeightStore& weights)
        : program_(program), fn_(function), weights_(weights) {}

    ValueId input(std::string name);
    ValueId embed(ValueId ids, std::string_view weight, std::string name);
    // bias may be empty.
    ValueId linear(ValueId x, std::string_view weight, std::string_view bias, std::string name);
    ValueId rms_norm(ValueId x, std::string_view gain, float eps, std::string name,
                     float gain_offset = 0);
    // x / rms(x) per group of `group` columns, with no gain.
    ValueId rms_norm_plain(ValueId x, int64_t group, float eps, std::string name);
    ValueId add(ValueId a, ValueId b, std::string name);
    ValueId mul(ValueId a, ValueId b, std::string name);
    ValueId silu_mul(ValueId gate, ValueId up, std::string name);
    ValueId gelu_tanh_mul(ValueId gate, ValueId up, std::string name);
    ValueId scale(ValueId x, float factor, std::string name);
    ValueId softcap(ValueId x, float cap, std::string name);
    ValueId rope(ValueId x, ValueId positions, int32_t rope, int64_t n_head, int64_t head_dim,
                 std::string name);
    ValueId attention(ValueId q, ValueId k, ValueId v, ValueId positions, const Attrs& attrs,
                      std::string name);
    // Attention over the K/V that the attention op of slot attrs.layer wrote.
    ValueId shared_attention(ValueId q, ValueId positions, const Attrs& attrs, std::string name);
    // Columns [col0, col0 + width) of x.
    ValueId columns(ValueId x, int64_t col0, int64_t width, std::string name);
    ValueId last_row(ValueId x, std::string name);
    // Rows [row0, row0 + rows) of the weight (and of the bias, when given):
    // one of several outputs a stored matrix packs together.
    ValueId linear_rows(ValueId x, std::string_view weight, std::string_view bias, int64_t row0,
                        int64_t rows, std::string name);
    ValueId silu(ValueId x, std::string name);
    ValueId sigmoid_mul(ValueId gate, ValueId x, std::string name);
    // attrs: heads, sizes, state and layer; a_log and dt_bias name the weights.
    ValueId gated_delta(ValueId qkv, ValueId b, ValueId a, ValueId positions,
                        std::string_view a_log, std::string_view dt_bias, const Attrs& attrs,
                        std::string name);
    // Rows [row0 + k * stride, row0 + k * stride + rows) for each k: one part
    // of every head of a matrix that packs several per head (a copy).
    ValueId linear_strided_rows(ValueId x, std::string_view weight, int64_t row0, int64_t rows,
                                int64_t stride, std::string name);
    // attrs: state and layer (its history's slot).
    ValueId causal_conv(ValueId x, ValueId positions, std::string_view weight,
                        std::string_view bias, const Attrs& attrs, std::string name);
    void output(ValueId value) { fn_.outputs.push_back(value); }

    const Node& node(ValueId id) const { return fn_.nodes[static_cast<size_t>(id)]; }

private:
    ValueId append(Node node);
    WeightId weight(std::string_view name);
    WeightId weight_rows(std::string_view name, int64_t row0, int64_t rows);
    WeightId weight_strided_rows(std::string_view name, int64_t row0, int64_t rows, int64_t stride);
    ValueId linear_node(ValueId x, WeightId weight, WeightId bias, std::string name);

    Program& program_;
    Function& fn_;
    const WeightStore& weights_;
};

}  // namespace anelm::ir
