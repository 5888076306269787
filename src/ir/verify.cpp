#include <cmath>

#include "base/error.h"
#include "ir/program.h"

namespace anelm::ir {

namespace {

struct Checker {
    const Program& program;
    const Function& fn;
    const Node& node;

    template <typename... Args>
    void require(bool ok, fmt::format_string<Args...> format, Args&&... args) const {
        if (!ok)
            fail("{}: node {} ({}): {}", fn.name, node.name, op_name(node.op),
                 fmt::format(format, std::forward<Args>(args)...));
    }
    const Node& in(size_t i) const { return fn.nodes[static_cast<size_t>(node.inputs[i])]; }
    const TensorView& weight(WeightId id) const {
        require(id >= 0 && id < static_cast<WeightId>(program.weights.size()), "no weight {}", id);
        return program.weights[static_cast<size_t>(id)].view;
    }
};

void verify_node(const Checker& c) {
    const Node& n = c.node;
    switch (n.op) {
        case Op::input:
            c.require(n.dtype == DType::i32, "inputs are i32");
            break;
        case Op::embed: {
            const TensorView& w = c.weight(n.weight);
            c.require(w.shape.size() == 2 && w.shape[1] == n.width, "table shape");
            c.require(c.in(0).dtype == DType::i32, "ids must be i32");
            break;
        }
        case Op::linear: {
            const TensorView& w = c.weight(n.weight);
            c.require(w.shape.size() == 2, "weight {} is not a matrix",
                      c.program.weights[n.weight].name);
            c.require(w.shape[1] == c.in(0).width, "input width {} but weight has {} columns",
                      c.in(0).width, w.shape[1]);
            c.require(w.shape[0] == n.width, "output width {} but weight has {} rows", n.width,
                      w.shape[0]);
            if (n.bias != no_weight) c.require(c.weight(n.bias).numel() == n.width, "bias length");
            break;
        }
        case Op::rms_norm: {
            const int64_t group =
                n.weight == no_weight ? n.attrs.head_dim : c.weight(n.weight).numel();
            c.require(group > 0 && n.width % group == 0, "gain of {} does not divide width {}",
                      group, n.width);
            c.require(n.attrs.eps > 0, "eps must be positive");
            break;
        }
        case Op::add:
        case Op::mul:
        case Op::silu_mul:
        case Op::gelu_tanh_mul:
            c.require(c.in(0).width == c.in(1).width, "widths {} and {} differ", c.in(0).width,
                      c.in(1).width);
            c.require(c.in(0).per_token == c.in(1).per_token, "row counts differ");
            break;
        case Op::scale:
            c.require(std::isfinite(n.attrs.scale), "scale must be finite");
            break;
        case Op::softcap:
            c.require(n.attrs.softcap > 0, "softcap must be positive");
            break;
        case Op::rope: {
            const auto& a = n.attrs;
            c.require(a.rope >= 0 && a.rope < static_cast<int32_t>(c.program.ropes.size()),
                      "no rope table {}", a.rope);
            c.require(a.n_head * a.head_dim == n.width, "width is not n_head * head_dim");
            c.require(
                static_cast<int64_t>(c.program.ropes[a.rope].inv_freq.size()) * 2 <= a.head_dim,
                "rope table has {} frequencies for head_dim {}",
                c.program.ropes[a.rope].inv_freq.size(), a.head_dim);
            break;
        }
        case Op::attention:
        case Op::shared_attention: {
            const auto& a = n.attrs;
            c.require(a.n_head_kv > 0 && a.n_head % a.n_head_kv == 0,
                      "n_head_kv must divide n_head");
            c.require(c.in(0).width == a.n_head * a.head_dim, "q width");
            if (n.op == Op::attention) {
                c.require(c.in(1).width == a.n_head_kv * a.head_dim, "k width");
                c.require(c.in(2).width == a.n_head_kv * a.head_dim, "v width");
            }
            c.require(a.state >= 0 && a.state < static_cast<int32_t>(c.program.states.size()),
                      "no state {}", a.state);
            const auto& shape = c.program.states[a.state].shape;
            c.require(shape.size() == 4 && shape[1] == a.n_head_kv && shape[3] == a.head_dim,
                      "state shape does not match the heads");
            c.require(a.layer >= 0 && 2 * (a.layer + 1) <= shape[0], "layer {} outside the state",
                      a.layer);
            c.require(a.window >= 0 && a.softcap >= 0, "window and softcap must not be negative");
            break;
        }
        case Op::last_row:
        case Op::silu:
            break;
        case Op::columns:
            c.require(n.attrs.col0 >= 0 && n.width > 0 && n.attrs.col0 + n.width <= c.in(0).width,
                      "columns {} to {} of {}", n.attrs.col0, n.attrs.col0 + n.width,
                      c.in(0).width);
            break;
        case Op::sigmoid_mul:
            c.require(c.in(0).width == c.in(1).width, "widths {} and {} differ", c.in(0).width,
                      c.in(1).width);
            break;
        case Op::gated_delta: {
            const auto& a = n.attrs;
            c.require(a.n_head_kv > 0 && a.n_head % a.n_head_kv == 0,
                      "key heads must divide value heads");
            c.require(c.in(0).width == 2 * a.n_head_kv * a.head_dim + a.n_head * a.value_dim,
                      "qkv width {}", c.in(0).width);
            c.require(c.in(1).width == a.n_head && c.in(2).width == a.n_head, "b and a widths");
            c.require(n.width == a.n_head * a.value_dim, "output width");
            c.require(c.weight(n.weight).numel() == a.n_head && n.bias != no_weight &&
                          c.weight(n.bias).numel() == a.n_head,
                      "A_log and dt_bias need one value per head");
            c.require(a.state >= 0 && a.state < static_cast<int32_t>(c.program.states.size()),
                      "no state {}", a.state);
            const auto& shape = c.program.states[a.state].shape;
            c.require(shape.size() == 4 && c.program.states[a.state].dtype == DType::f32 &&
                          shape[3] == a.n_head * a.head_dim * a.value_dim,
                      "state shape does not match the heads");
            c.require(a.layer >= 0 && a.layer < shape[0], "layer {} outside the state", a.layer);
            break;
        }
        case Op::causal_conv: {
            const TensorView& w = c.weight(n.weight);
            c.require(w.shape.size() >= 2 && w.shape[0] == n.width && n.width == c.in(0).width,
                      "weight of {} channels for a width of {}", w.shape.at(0), n.width);
            if (n.bias != no_weight) c.require(c.weight(n.bias).numel() == n.width, "bias length");
            const auto& a = n.attrs;
            c.require(a.state >= 0 && a.state < static_cast<int32_t>(c.program.states.size()),
                      "no state {}", a.state);
            const auto& shape = c.program.states[a.state].shape;
            c.require(shape.size() == 4 && shape[1] == 1 && shape[3] == n.width,
                      "state shape does not match the channels");
            c.require(a.layer >= 0 && a.layer < shape[0], "layer {} outside the state", a.layer);
            c.require(n.per_token && c.in(0).per_token, "runs on every token's row");
            break;
        }
        case Op::count:
            c.require(false, "invalid op");
    }
}

}  // namespace

void verify(const Program& program) {
    for (const Function& fn : program.functions) {
        for (size_t i = 0; i < fn.nodes.size(); ++i) {
            const Node& n = fn.nodes[i];
            Checker c{program, fn, n};
            c.require(static_cast<int>(n.inputs.size()) == op_arity(n.op),
                      "takes {} inputs, has {}", op_arity(n.op), n.inputs.size());
            for (ValueId in : n.inputs)
                c.require(in >= 0 && static_cast<size_t>(in) < i, "input {} is not defined before",
                          in);
            c.require(n.width > 0, "width must be positive");
            verify_node(c);
        }
        for (ValueId out : fn.outputs)
            if (out < 0 || static_cast<size_t>(out) >= fn.nodes.size())
                fail("{}: output {} is not a value", fn.name, out);
    }
}

}  // namespace anelm::ir
