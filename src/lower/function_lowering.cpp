#include "lower/function_lowering.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace anelm::lower {

namespace mil = coreml::mil;
using coreml::MilParam;

namespace {

std::vector<int64_t> broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    std::vector<int64_t> out(std::max(a.size(), b.size()), 1);
    for (size_t i = 0; i < out.size(); ++i) {
        const size_t k = out.size() - 1 - i;
        const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
        const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
        out[k] = da == 1 ? db : da;
    }
    return out;
}

}  // namespace

std::string mil_name(std::string_view ir_name) {
    std::string s(ir_name);
    for (char& c : s)
        if (c == '.' || c == '-' || c == ':') c = '_';
    return s;
}

const MilValue& FunctionLowering::value(ir::ValueId id) const {
    const auto it = values_.find(id);
    if (it == values_.end())
        fail("{}: {} is read before it is lowered", fn_.name,
             fn_.nodes[static_cast<size_t>(id)].name);
    return it->second;
}

MilValue FunctionLowering::reshape(const MilValue& x, std::vector<int64_t> shape,
                                   const std::string& name) {
    std::vector<int32_t> s(shape.begin(), shape.end());
    return b_.op("reshape", name, {{"x", x}, {"shape", MilParam::i32s(s)}}, x.dtype,
                 std::move(shape));
}

MilValue FunctionLowering::transpose(const MilValue& x, std::vector<int32_t> perm,
                                     const std::string& name) {
    std::vector<int64_t> shape;
    for (int32_t p : perm) shape.push_back(x.shape.at(static_cast<size_t>(p)));
    return b_.op("transpose", name, {{"x", x}, {"perm", MilParam::i32s(std::move(perm))}}, x.dtype,
                 std::move(shape));
}

MilValue FunctionLowering::slice(const MilValue& x, std::vector<int32_t> begin,
                                 std::vector<int32_t> end, const std::string& name) {
    // A dimension of unknown size (-1: the embeddings' flexible tokens) is
    // taken whole through end_mask; an end of -1 would drop its last element.
    std::vector<int64_t> shape;
    std::vector<bool> whole(begin.size(), false);
    for (size_t i = 0; i < begin.size(); ++i) {
        whole[i] = x.shape.at(i) < 0 && begin[i] == 0 && end[i] < 0;
        shape.push_back(whole[i] ? -1 : end[i] - begin[i]);
    }
    std::vector<coreml::MilInput> params{{"x", x},
                                         {"begin", MilParam::i32s(std::move(begin))},
                                         {"end", MilParam::i32s(std::move(end))}};
    if (std::ranges::find(whole, true) != whole.end())
        params.emplace_back("end_mask", MilParam::bools(std::move(whole)));
    return b_.op("slice_by_index", name, std::move(params), x.dtype, std::move(shape));
}

MilValue FunctionLowering::binary(const char* op, const MilValue& x, const MilValue& y,
                                  const std::string& name) {
    return b_.op(op, name, {{"x", x}, {"y", y}}, x.dtype, broadcast(x.shape, y.shape));
}

MilValue FunctionLowering::scalar_mul(const MilValue& x, float factor, const std::string& name) {
    return b_.op("mul", name, {{"x", x}, {"y", MilParam::fp16(factor)}}, x.dtype, x.shape);
}

MilValue FunctionLowering::unary(const char* op, const MilValue& x, const std::string& name) {
    return b_.op(op, name, {{"x", x}}, x.dtype, x.shape);
}

MilValue FunctionLowering::to_channels(const MilValue& rows, const std::string& name) {
    const MilValue t = transpose(rows, {0, 2, 1}, name + "_t");
    return b_.op("expand_dims", name, {{"x", t}, {"axes", MilParam::i32s({2})}}, t.dtype,
                 {t.shape[0], t.shape[1], 1, t.shape[2]});
}

MilValue FunctionLowering::to_rows(const MilValue& channels, const std::string& name) {
    const MilValue s =
        b_.op("squeeze", name + "_s", {{"x", channels}, {"axes", MilParam::i32s({2})}},
              channels.dtype, {channels.shape[0], channels.shape[1], channels.shape[3]});
    return transpose(s, {0, 2, 1}, name);
}

const MilValue& FunctionLowering::channels(ir::ValueId id) {
    if (!rows_.contains(id)) return value(id);
    if (const auto it = channels_.find(id); it != channels_.end()) return it->second;
    return channels_[id] = to_channels(value(id), value(id).name + "_channels");
}

bool FunctionLowering::keeps_rows(const ir::Node& node) const {
    // These compute the same in either layout.
    const bool layout_free = node.op == ir::Op::scale || node.op == ir::Op::softcap ||
                             node.op == ir::Op::add || node.op == ir::Op::mul;
    return layout_free &&
           std::ranges::all_of(node.inputs, [&](ir::ValueId in) { return rows_.contains(in); });
}

void FunctionLowering::lower(ir::ValueId id) {
    const ir::Node& node = fn_.nodes[static_cast<size_t>(id)];
    const std::string name = mil_name(node.name) + name_suffix;
    const bool folds_scale = node.op == ir::Op::linear || node.op == ir::Op::embed ||
                             (node.op == ir::Op::rms_norm && node.weight != ir::no_weight);
    const bool rows = node.op == ir::Op::embed || keeps_rows(node);
    if (node.attrs.out_scale == 1.0f || folds_scale)
        values_[id] = lower_node(node, name);
    else
        values_[id] = scalar_mul(lower_node(node, name + "_unscaled"), node.attrs.out_scale, name);
    if (rows) rows_.insert(id);
}

MilValue FunctionLowering::lower_node(const ir::Node& node, const std::string& name) {
    // Inputs in the row layout stay so for the ops that keep it, else turn.
    const bool rows = keeps_rows(node);
    auto in = [&](size_t k) -> const MilValue& {
        return rows ? value(node.inputs.at(k)) : channels(node.inputs.at(k));
    };
    switch (node.op) {
        case ir::Op::embed: {
            const MilValue table =
                pkg_.weights.table(b_, node.weight, node.attrs.out_scale, name + "_table");
            return b_.op("gather", name,
                         {{"x", table},
                          {"indices", input_ids},
                          {"axis", MilParam::i32(0)},
                          {"batch_dims", MilParam::i32(0)},
                          {"validate_indices", MilParam::boolean(false)}},
                         mil::FLOAT16, {1, t_, table.shape.at(1)});
        }
        case ir::Op::linear:
            return linear(node, name);
        case ir::Op::rms_norm:
            return rms_norm(node, name);
        case ir::Op::add:
            return binary("add", in(0), in(1), name);
        case ir::Op::mul:
            return binary("mul", in(0), in(1), name);
        case ir::Op::silu_mul:
            return binary("mul", silu(in(0), name + "_silu"), in(1), name);
        case ir::Op::silu:
            return silu(in(0), name);
        case ir::Op::sigmoid_mul:
            return binary("mul", unary("sigmoid", in(0), name + "_sigmoid"), in(1), name);
        case ir::Op::gelu_tanh_mul:
            return gelu_tanh_mul(in(0), in(1), name);
        case ir::Op::scale:
            return scalar_mul(in(0), node.attrs.scale, name);
        case ir::Op::softcap: {
            const float cap = node.attrs.softcap;
            const MilValue th =
                unary("tanh", scalar_mul(in(0), 1.0f / cap, name + "_div"), name + "_tanh");
            return scalar_mul(th, cap, name);
        }
        case ir::Op::rope:
            return rope(node, name);
        case ir::Op::attention:
            return attention(node, name);
        case ir::Op::last_row:
            // Lowered only where one row is left (infer, or a prefill cut to its
            // first row), or where every row goes on (verify).
            if (all_rows) return in(0);
            if (in(0).shape.back() != 1)
                fail("{}: {} is lowered only for one token", fn_.name, node.name);
            return in(0);
        case ir::Op::causal_conv:
            return causal_conv(node, name);
        case ir::Op::gated_delta:
            return gated_delta(node, name);
        case ir::Op::columns: {
            const auto t = static_cast<int32_t>(in(0).shape.at(3));
            const auto col0 = static_cast<int32_t>(node.attrs.col0);
            return slice(in(0), {0, col0, 0, 0}, {1, col0 + static_cast<int32_t>(node.width), 1, t},
                         name);
        }
        case ir::Op::shared_attention:
            return attention(node, name);
        case ir::Op::input:
        case ir::Op::count:
            break;
    }
    fail("{}: {} ({}) has no ANE lowering", fn_.name, node.name, ir::op_name(node.op));
}

MilValue FunctionLowering::linear(const ir::Node& node, const std::string& name) {
    const MilValue& x = channels(node.inputs.at(0));
    const ir::Weight& w = pkg_.program.weights.at(static_cast<size_t>(node.weight));
    const int64_t row0 = head_rows ? head_row0 : 0;
    const int64_t rows = head_rows ? head_rows : w.view.shape.at(0);
    const float scale = node.attrs.out_scale;
    const MilValue weight =
        pkg_.weights.conv_weight(b_, node.weight, scale, row0, rows, name + "_weight");
    const int64_t t = x.shape.at(3);
    std::vector<coreml::MilInput> inputs{{"x", x},
                                         {"weight", weight},
                                         {"strides", MilParam::i32s({1, 1})},
                                         {"pad_type", MilParam::string("valid")},
                                         {"pad", MilParam::i32s({0, 0, 0, 0})},
                                         {"dilations", MilParam::i32s({1, 1})},
                                         {"groups", MilParam::i32(1)}};
    const int64_t padded = weight.shape.at(0);
    if (padded == rows) {
        if (node.bias != ir::no_weight)
            inputs.emplace_back("bias", pkg_.weights.vector(b_, node.bias, 0, scale, row0, rows,
                                                            {rows}, name + "_bias"));
        return b_.op("conv", name, inputs, mil::FLOAT16, {1, rows, 1, t});
    }
    // A LUT's last group padded to whole rows: their outputs are cut off, then the bias added.
    const MilValue all = b_.op("conv", name + "_padded", inputs, mil::FLOAT16, {1, padded, 1, t});
    const auto end = static_cast<int32_t>(rows);
    if (node.bias == ir::no_weight) return slice(all, {0, 0, 0, 0}, {1, end, 1, int32_t(t)}, name);
    const MilValue y = slice(all, {0, 0, 0, 0}, {1, end, 1, int32_t(t)}, name + "_rows");
    return binary(
        "add", y,
        pkg_.weights.vector(b_, node.bias, 0, scale, row0, rows, {1, rows, 1, 1}, name + "_bias"),
        name);
}

MilValue FunctionLowering::rms_norm(const ir::Node& node, const std::string& name) {
    const MilValue& x = channels(node.inputs.at(0));  // [1, C, 1, T]
    const bool has_gain = node.weight != ir::no_weight;
    const int64_t c = x.shape.at(1);
    const int64_t g = has_gain
                          ? pkg_.program.weights.at(static_cast<size_t>(node.weight)).view.numel()
                          : node.attrs.head_dim;
    const int64_t t = x.shape.at(3);
    // Groups of g channels (one per head for q/k norms) on axis 2; the whole
    // width on axis 1 otherwise.
    const bool grouped = g != c;
    // rms(b x) with epsilon b^2 eps is b rms(x): a boosted input normalizes the same.
    const auto boost = boosted_.find(node.inputs.at(0));
    const float b = boost == boosted_.end() ? 1.0f : boost->second;
    const MilValue xs = grouped ? reshape(x, {1, c / g, g, t}, name + "_groups") : x;
    const int axis = grouped ? 2 : 1;
    const MilValue neg = scalar_mul(xs, -1.0f, name + "_neg");
    std::vector<int64_t> both_shape = xs.shape;
    both_shape[static_cast<size_t>(axis)] *= 2;
    const MilValue both = b_.op("concat", name + "_both",
                                {{"values", std::vector<MilValue>{xs, neg}},
                                 {"axis", MilParam::i32(axis)},
                                 {"interleave", MilParam::boolean(false)}},
                                mil::FLOAT16, both_shape);
    const MilValue normed = b_.op("layer_norm", name + "_ln",
                                  {{"x", both},
                                   {"axes", MilParam::i32s({axis})},
                                   {"epsilon", MilParam::fp16(node.attrs.eps * b * b)}},
                                  mil::FLOAT16, both_shape);
    std::vector<int32_t> end(xs.shape.begin(), xs.shape.end());
    if (!has_gain) {  // lower() applies an out_scale, which has no gain to fold into
        const MilValue half = slice(normed, {0, 0, 0, 0}, end, grouped ? name + "_half" : name);
        return grouped ? reshape(half, {1, c, 1, t}, name) : half;
    }
    const MilValue half = slice(normed, {0, 0, 0, 0}, end, name + "_half");
    std::vector<int64_t> gain_shape{1, 1, 1, 1};
    gain_shape[static_cast<size_t>(axis)] = g;
    const MilValue gv = pkg_.weights.vector(b_, node.weight, node.attrs.gain_offset,
                                            node.attrs.out_scale, 0, g, gain_shape, name + "_gain");
    if (!grouped) return binary("mul", half, gv, name);
    return reshape(binary("mul", half, gv, name + "_scaled"), {1, c, 1, t}, name);
}

MilValue FunctionLowering::gelu_tanh_mul(const MilValue& gate, const MilValue& up,
                                         const std::string& name) {
    // 0.5 g (1 + tanh(sqrt(2 / pi) (g + 0.044715 g^3))) * up
    const MilValue g2 = binary("mul", gate, gate, name + "_g2");
    const MilValue g3 = binary("mul", g2, gate, name + "_g3");
    const MilValue inner =
        binary("add", gate, scalar_mul(g3, 0.044715f, name + "_cubic"), name + "_inner");
    const float k = std::sqrt(2.0f / static_cast<float>(M_PI));
    const MilValue th = unary("tanh", scalar_mul(inner, k, name + "_arg"), name + "_tanh");
    const MilValue one_plus = b_.op("add", name + "_one_plus",
                                    {{"x", th}, {"y", MilParam::fp16(1.0f)}}, th.dtype, th.shape);
    const MilValue half_g = scalar_mul(gate, 0.5f, name + "_half");
    const MilValue gelu = binary("mul", half_g, one_plus, name + "_gelu");
    return binary("mul", gelu, up, name);
}

MilValue FunctionLowering::silu(const MilValue& x, const std::string& name) {
    if (!pkg_.numerics.tanh_silu || !pkg_.carries_states)
        return binary("mul", x, unary("sigmoid", x, name + "_sigmoid"), name);
    // x sigmoid(x) = 0.5 x (1 + tanh(x / 2))
    const MilValue th = unary("tanh", scalar_mul(x, 0.5f, name + "_half_x"), name + "_tanh");
    const MilValue one_plus = b_.op("add", name + "_one_plus",
                                    {{"x", th}, {"y", MilParam::fp16(1.0f)}}, th.dtype, th.shape);
    return binary("mul", scalar_mul(x, 0.5f, name + "_half"), one_plus, name);
}

MilValue FunctionLowering::softplus(const MilValue& x, const std::string& name) {
    if (!pkg_.numerics.stable_softplus) {
        // As written: exp(x) overflows fp16 above about 11.
        const MilValue e = unary("exp", x, name + "_exp");
        return unary("log",
                     b_.op("add", name + "_one_plus", {{"x", e}, {"y", MilParam::fp16(1.0f)}},
                           e.dtype, e.shape),
                     name);
    }
    // log(1 + exp(x)) = max(x, 0) + log(1 + exp(-|x|)): exp never exceeds 1.
    const MilValue neg_abs = scalar_mul(unary("abs", x, name + "_abs"), -1.0f, name + "_neg_abs");
    const MilValue e = unary("exp", neg_abs, name + "_exp");
    const MilValue one_plus =
        b_.op("add", name + "_one_plus", {{"x", e}, {"y", MilParam::fp16(1.0f)}}, e.dtype, e.shape);
    const MilValue tail = unary("log", one_plus, name + "_log");
    return binary("add", unary("relu", x, name + "_relu"), tail, name);
}

}  // namespace anelm::lower
