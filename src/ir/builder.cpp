#include "ir/builder.h"

#include <fmt/format.h>

#include "base/error.h"

namespace anelm::ir {

ValueId Builder::append(Node node) {
    for (ValueId in : node.inputs)
        if (in < 0 || in >= static_cast<ValueId>(fn_.nodes.size()))
            fail("{}: node {} uses undefined value {}", fn_.name, node.name, in);
    fn_.nodes.push_back(std::move(node));
    return static_cast<ValueId>(fn_.nodes.size() - 1);
}

WeightId Builder::weight(std::string_view name) {
    return program_.add_weight(std::string(name), weights_.get(name));
}

ValueId Builder::input(std::string name) {
    Node n;
    n.op = Op::input;
    n.name = std::move(name);
    n.width = 1;
    n.dtype = DType::i32;
    return append(std::move(n));
}

ValueId Builder::embed(ValueId ids, std::string_view weight_name, std::string name) {
    Node n;
    n.op = Op::embed;
    n.name = std::move(name);
    n.inputs = {ids};
    n.weight = weight(weight_name);
    n.width = program_.weights[n.weight].view.shape.back();
    return append(std::move(n));
}

ValueId Builder::linear_node(ValueId x, WeightId weight, WeightId bias, std::string name) {
    Node n;
    n.op = Op::linear;
    n.name = std::move(name);
    n.inputs = {x};
    n.weight = weight;
    n.bias = bias;
    n.per_token = node(x).per_token;
    n.width = program_.weights[weight].view.shape.front();
    return append(std::move(n));
}

ValueId Builder::linear(ValueId x, std::string_view weight_name, std::string_view bias,
                        std::string name) {
    const WeightId w = weight(weight_name);  // before the bias, as the program lists them
    return linear_node(x, w, bias.empty() ? no_weight : weight(bias), std::move(name));
}

ValueId Builder::rms_norm(ValueId x, std::string_view gain, float eps, std::string name,
                          float gain_offset) {
    Node n;
    n.op = Op::rms_norm;
    n.name = std::move(name);
    n.inputs = {x};
    n.weight = weight(gain);
    n.attrs.eps = eps;
    n.attrs.gain_offset = gain_offset;
    n.per_token = node(x).per_token;
    n.width = node(x).width;
    return append(std::move(n));
}

ValueId Builder::rms_norm_plain(ValueId x, int64_t group, float eps, std::string name) {
    Node n;
    n.op = Op::rms_norm;
    n.name = std::move(name);
    n.inputs = {x};
    n.attrs.eps = eps;
    n.attrs.head_dim = group;
    n.per_token = node(x).per_token;
    n.width = node(x).width;
    return append(std::move(n));
}

static Node elementwise(Op op, const Node& a, ValueId ia, ValueId ib, std::string name) {
    Node n;
    n.op = op;
    n.name = std::move(name);
    n.inputs = {ia, ib};
    n.per_token = a.per_token;
    n.width = a.width;
    return n;
}

ValueId Builder::add(ValueId a, ValueId b, std::string name) {
    return append(elementwise(Op::add, node(a), a, b, std::move(name)));
}

ValueId Builder::mul(ValueId a, ValueId b, std::string name) {
    return append(elementwise(Op::mul, node(a), a, b, std::move(name)));
}

ValueId Builder::silu_mul(ValueId gate, ValueId up, std::string name) {
    return append(elementwise(Op::silu_mul, node(gate), gate, up, std::move(name)));
}

ValueId Builder::gelu_tanh_mul(ValueId gate, ValueId up, std::string name) {
    return append(elementwise(Op::gelu_tanh_mul, node(gate), gate, up, std::move(name)));
}

static Node unary(Op op, const Node& x, ValueId ix, std::string name) {
    Node n;
    n.op = op;
    n.name = std::move(name);
    n.inputs = {ix};
    n.per_token = x.per_token;
    n.width = x.width;
    return n;
}

ValueId Builder::scale(ValueId x, float factor, std::string name) {
    Node n = unary(Op::scale, node(x), x, std::move(name));
    n.attrs.scale = factor;
    return append(std::move(n));
}

ValueId Builder::softcap(ValueId x, float cap, std::string name) {
    Node n = unary(Op::softcap, node(x), x, std::move(name));
    n.attrs.softcap = cap;
    return append(std::move(n));
}

ValueId Builder::rope(ValueId x, ValueId positions, int32_t rope, int64_t n_head, int64_t head_dim,
                      std::string name) {
    Node n;
    n.op = Op::rope;
    n.name = std::move(name);
    n.inputs = {x, positions};
    n.attrs.rope = rope;
    n.attrs.n_head = n_head;
    n.attrs.head_dim = head_dim;
    n.width = node(x).width;
    return append(std::move(n));
}

ValueId Builder::attention(ValueId q, ValueId k, ValueId v, ValueId positions, const Attrs& attrs,
                           std::string name) {
    Node n;
    n.op = Op::attention;
    n.name = std::move(name);
    n.inputs = {q, k, v, positions};
    n.attrs = attrs;
    n.width = attrs.n_head * attrs.head_dim;
    return append(std::move(n));
}

ValueId Builder::shared_attention(ValueId q, ValueId positions, const Attrs& attrs,
                                  std::string name) {
    Node n;
    n.op = Op::shared_attention;
    n.name = std::move(name);
    n.inputs = {q, positions};
    n.attrs = attrs;
    n.width = attrs.n_head * attrs.head_dim;
    return append(std::move(n));
}

ValueId Builder::columns(ValueId x, int64_t col0, int64_t width, std::string name) {
    Node n = unary(Op::columns, node(x), x, std::move(name));
    n.attrs.col0 = col0;
    n.width = width;
    return append(std::move(n));
}

WeightId Builder::weight_rows(std::string_view name, int64_t row0, int64_t rows) {
    const TensorView& whole = weights_.get(name);
    if (row0 < 0 || rows < 1 || row0 + rows > whole.shape.at(0))
        fail("{}: rows {} to {} of {}", name, row0, row0 + rows, whole.shape[0]);
    TensorView part = whole;
    part.shape[0] = rows;
    part.data +=
        static_cast<size_t>(row0) * (whole.n_bytes() / static_cast<size_t>(whole.shape[0]));
    return program_.add_weight(fmt::format("{}:{}-{}", name, row0, row0 + rows), part);
}

ValueId Builder::linear_rows(ValueId x, std::string_view weight_name, std::string_view bias,
                             int64_t row0, int64_t rows, std::string name) {
    const WeightId w = weight_rows(weight_name, row0, rows);
    return linear_node(x, w, bias.empty() ? no_weight : weight_rows(bias, row0, rows),
                       std::move(name));
}

ValueId Builder::causal_conv(ValueId x, ValueId positions, std::string_view weight_name,
                             std::string_view bias, const Attrs& attrs, std::string name) {
    Node n;
    n.op = Op::causal_conv;
    n.name = std::move(name);
    n.inputs = {x, positions};
    n.weight = weight(weight_name);
    if (!bias.empty()) n.bias = weight(bias);
    n.attrs = attrs;
    n.width = node(x).width;
    return append(std::move(n));
}

ValueId Builder::silu(ValueId x, std::string name) {
    Node n;
    n.op = Op::silu;
    n.name = std::move(name);
    n.inputs = {x};
    n.per_token = node(x).per_token;
    n.width = node(x).width;
    return append(std::move(n));
}

ValueId Builder::sigmoid_mul(ValueId gate, ValueId x, std::string name) {
    Node n;
    n.op = Op::sigmoid_mul;
    n.name = std::move(name);
    n.inputs = {gate, x};
    n.per_token = node(x).per_token;
    n.width = node(x).width;
    return append(std::move(n));
}

ValueId Builder::gated_delta(ValueId qkv, ValueId b, ValueId a, ValueId positions,
                             std::string_view a_log, std::string_view dt_bias, const Attrs& attrs,
                             std::string name) {
    Node n;
    n.op = Op::gated_delta;
    n.name = std::move(name);
    n.inputs = {qkv, b, a, positions};
    n.weight = weight(a_log);
    n.bias = weight(dt_bias);
    n.attrs = attrs;
    n.width = attrs.n_head * attrs.value_dim;
    return append(std::move(n));
}

WeightId Builder::weight_strided_rows(std::string_view name, int64_t row0, int64_t rows,
                                      int64_t stride) {
    const std::string part = fmt::format("{}:{}+{}/{}", name, row0, rows, stride);
    for (size_t i = 0; i < program_.weights.size(); ++i)
        if (program_.weights[i].name == part) return static_cast<WeightId>(i);
    const TensorView& whole = weights_.get(name);
    const int64_t n_rows = whole.shape.at(0);
    if (stride < 1 || n_rows % stride != 0 || row0 < 0 || row0 + rows > stride)
        fail("{}: rows {}+{} of every {} of {}", name, row0, rows, stride, n_rows);
    const size_t row_bytes = whole.n_bytes() / static_cast<size_t>(n_rows);
    auto bytes = std::make_shared<std::vector<std::byte>>();
    bytes->reserve(static_cast<size_t>(n_rows / stride * rows) * row_bytes);
    for (int64_t k = 0; k < n_rows / stride; ++k) {
        const std::byte* from = whole.data + static_cast<size_t>(k * stride + row0) * row_bytes;
        bytes->insert(bytes->end(), from, from + static_cast<size_t>(rows) * row_bytes);
    }
    TensorView view = whole;
    view.shape[0] = n_rows / stride * rows;
    view.data = bytes->data();
    program_.weights.push_back(Weight{part, view, nullptr, std::move(bytes)});
    return static_cast<WeightId>(program_.weights.size() - 1);
}

ValueId Builder::linear_strided_rows(ValueId x, std::string_view weight_name, int64_t row0,
                                     int64_t rows, int64_t stride, std::string name) {
    return linear_node(x, weight_strided_rows(weight_name, row0, rows, stride), no_weight,
                       std::move(name));
}

ValueId Builder::last_row(ValueId x, std::string name) {
    Node n;
    n.op = Op::last_row;
    n.name = std::move(name);
    n.inputs = {x};
    n.per_token = false;
    n.width = node(x).width;
    return append(std::move(n));
}

}  // namespace anelm::ir
