// The layers that carry a state from token to token, written out for the ANE
// with that state as a function input and output (the KV cache stays the one
// MLState of every graph):
// - causal_conv: the last K - 1 inputs of each channel are the window; the
//   window and the new inputs run through one grouped conv, and the window
//   that leaves is the last K - 1 columns of the two concatenated;
// - gated_delta: everything per token that does not touch the state (the q/k
//   normalization, beta, the decay) computed for all T tokens at once, then
//   the recurrence written out token by token on [1, heads, dk, dv].
// Both assume every token of a call is real: the runners give prefill full
// batches only and the rest one token at a time (README.txt in OUT says so).
#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "io/tensor_values.h"
#include "lower/function_lowering.h"

namespace anelm::lower {

namespace mil = coreml::mil;
using coreml::MilParam;

namespace {

bool carries(ir::Op op) {
    return op == ir::Op::causal_conv || op == ir::Op::gated_delta;
}

std::vector<float> weight_values(const ir::Weight& w) {
    std::vector<float> v(static_cast<size_t>(w.view.numel()));
    read_f32(w.view, 0, w.view.numel(), v.data());
    return v;
}

int64_t conv_taps(const ir::Weight& w) {
    const int64_t k = w.view.shape.back();
    if (k < 2) fail("{}: a causal conv of {} taps has no window to carry", w.name, k);
    return k;
}

}  // namespace

bool is_carried_state(const ir::Program& program, int32_t state) {
    for (const ir::Function& fn : program.functions)
        for (const ir::Node& node : fn.nodes)
            if (carries(node.op) && node.attrs.state == state) return true;
    return false;
}

PackageContext::PackageContext(const ir::Program& p, int64_t ctx, AneNumerics n)
    : program(p),
      weights(p, blobs),
      n_ctx(ctx),
      numerics(n),
      carries_states(false),
      kv(kv_layout(p)) {
    for (size_t i = 0; i < p.states.size(); ++i)
        carries_states = carries_states || is_carried_state(p, static_cast<int32_t>(i));
}

void FunctionLowering::carry_states(const std::vector<ir::ValueId>& nodes) {
    // One place per layer on axis 0, in the order the layers come.
    std::map<int32_t, std::vector<int64_t>> per_layer_shape;
    for (ir::ValueId id : nodes) {
        const ir::Node& node = fn_.nodes[static_cast<size_t>(id)];
        if (!carries(node.op)) continue;
        CarriedState& c = carried[node.attrs.state];
        c.index.emplace(node.attrs.layer, static_cast<int64_t>(c.index.size()));
        const ir::Attrs& a = node.attrs;
        if (node.op == ir::Op::causal_conv) {
            const int64_t k = conv_taps(pkg_.program.weights.at(static_cast<size_t>(node.weight)));
            per_layer_shape[a.state] = {node.width, 1, k - 1};
            c.input.name = "conv_state";
        } else {
            per_layer_shape[a.state] = {a.n_head, a.head_dim, a.value_dim};
            c.input.name = "delta_state";
        }
    }
    for (auto& [state, c] : carried) {
        std::vector<int64_t> shape{static_cast<int64_t>(c.index.size())};
        for (int64_t d : per_layer_shape.at(state)) shape.push_back(d);
        c.input.dtype = mil::FLOAT16;
        c.input.shape = std::move(shape);
        c.updated.resize(c.index.size());
    }
}

std::vector<MilValue> FunctionLowering::carried_outputs() {
    std::vector<MilValue> outputs;
    for (auto& [state, c] : carried) {
        for (const MilValue& u : c.updated)
            if (u.name.empty()) fail("{}: a layer of {} was never lowered", fn_.name, c.input.name);
        const std::string name = c.input.name + "_out";
        outputs.push_back(c.updated.size() == 1 ? reshape(c.updated[0], c.input.shape, name)
                                                : b_.op("concat", name,
                                                        {{"values", c.updated},
                                                         {"axis", MilParam::i32(0)},
                                                         {"interleave", MilParam::boolean(false)}},
                                                        mil::FLOAT16, c.input.shape));
        b_.output(outputs.back());
    }
    return outputs;
}

MilValue FunctionLowering::causal_conv(const ir::Node& node, const std::string& name) {
    const MilValue& x = value(node.inputs.at(0));  // [1, C, 1, T]
    CarriedState& c = carried.at(node.attrs.state);
    const int64_t at = c.index.at(node.attrs.layer);
    const ir::Weight& w = pkg_.program.weights.at(static_cast<size_t>(node.weight));
    const int64_t k = conv_taps(w), ch = node.width;
    const auto ci = static_cast<int32_t>(ch), ki = static_cast<int32_t>(k);
    const MilValue window = slice(c.input, {static_cast<int32_t>(at), 0, 0, 0},
                                  {static_cast<int32_t>(at + 1), ci, 1, ki - 1}, name + "_window");
    const MilValue all = b_.op("concat", name + "_all",
                               {{"values", std::vector<MilValue>{window, x}},
                                {"axis", MilParam::i32(3)},
                                {"interleave", MilParam::boolean(false)}},
                               mil::FLOAT16, {1, ch, 1, k - 1 + t_});
    // Depthwise: a weight of fp16 taps, never palettized (the notes: LUT on
    // the depthwise conv fails on the ANE).
    const MilValue taps =
        pkg_.weights.vector(b_, node.weight, 0, 1, 0, ch * k, {ch, 1, 1, k}, name + "_weight");
    std::vector<coreml::MilInput> inputs{{"x", all},
                                         {"weight", taps},
                                         {"strides", MilParam::i32s({1, 1})},
                                         {"pad_type", MilParam::string("valid")},
                                         {"pad", MilParam::i32s({0, 0, 0, 0})},
                                         {"dilations", MilParam::i32s({1, 1})},
                                         {"groups", MilParam::i32(ci)}};
    if (node.bias != ir::no_weight)
        inputs.emplace_back("bias",
                            pkg_.weights.vector(b_, node.bias, 0, 1, 0, ch, {ch}, name + "_bias"));
    const auto ti = static_cast<int32_t>(t_);
    c.updated[static_cast<size_t>(at)] =
        slice(all, {0, 0, 0, ti}, {1, ci, 1, ti + ki - 1}, name + "_next_window");
    return b_.op("conv", name, inputs, mil::FLOAT16, {1, ch, 1, t_});
}

MilValue FunctionLowering::token_heads(const MilValue& x, int64_t n, int64_t d,
                                       const std::string& name) {
    return transpose(reshape(x, {n, d, t_}, name + "_heads"), {2, 0, 1}, name);
}

MilValue FunctionLowering::l2_normalized(const MilValue& x, const std::string& name) {
    // x / sqrt(sum x^2 + 1e-6) over the last axis, computed on x / max|x| so
    // that the sum of squares neither overflows nor sinks into subnormals in
    // fp16; the epsilon becomes (1e-3 / m)^2. m is kept above fp16's smallest
    // normal, so a zero vector stays zero.
    std::vector<int64_t> one = x.shape;
    one.back() = 1;
    const MilValue peak = b_.op("reduce_max", name + "_peak",
                                {{"x", unary("abs", x, name + "_abs")},
                                 {"axes", MilParam::i32s({-1})},
                                 {"keep_dims", MilParam::boolean(true)}},
                                mil::FLOAT16, one);
    const MilValue m =
        b_.op("maximum", name + "_m", {{"x", peak}, {"y", MilParam::fp16(6.103515625e-05f)}},
              mil::FLOAT16, one);
    const MilValue unit = binary("real_div", x, m, name + "_unit");
    const MilValue sum = b_.op("reduce_sum", name + "_sum",
                               {{"x", unary("square", unit, name + "_square")},
                                {"axes", MilParam::i32s({-1})},
                                {"keep_dims", MilParam::boolean(true)}},
                               mil::FLOAT16, one);
    const MilValue eps_root = b_.op("real_div", name + "_eps_root",
                                    {{"x", MilParam::fp16(1e-3f)}, {"y", m}}, mil::FLOAT16, one);
    const MilValue eps = unary("square", eps_root, name + "_eps");
    const MilValue r = unary("rsqrt", binary("add", sum, eps, name + "_sum_eps"), name + "_rsqrt");
    return binary("mul", unit, r, name);
}

MilValue FunctionLowering::gated_delta(const ir::Node& node, const std::string& name) {
    const ir::Attrs& a = node.attrs;
    const int64_t nv = a.n_head, nk = a.n_head_kv, dk = a.head_dim, dv = a.value_dim;
    const int64_t rep = nv / nk;
    CarriedState& c = carried.at(a.state);
    const int64_t at = c.index.at(a.layer);
    const AneNumerics& num = pkg_.numerics;
    const MilValue& qkv = value(node.inputs.at(0));  // [1, 2 nk dk + nv dv, 1, T]
    const auto ti = static_cast<int32_t>(t_);
    auto channels = [&](int64_t from, int64_t n, const std::string& what) {
        return slice(qkv, {0, static_cast<int32_t>(from), 0, 0},
                     {1, static_cast<int32_t>(from + n), 1, ti}, name + "_" + what);
    };
    // Key heads shared by several value heads: tiled (head h reads key head
    // h % nk) or grouped (h / rep).
    auto value_heads = [&](const MilValue& x, const std::string& what) {  // [T, nk, dk]
        if (rep == 1) return x;
        if (a.heads_tiled)
            return b_.op("tile", name + "_" + what + "_tiled",
                         {{"x", x}, {"reps", MilParam::i32s({1, static_cast<int32_t>(rep), 1})}},
                         mil::FLOAT16, {t_, nv, dk});
        const MilValue g = reshape(x, {t_, nk, 1, dk}, name + "_" + what + "_groups");
        const MilValue t =
            b_.op("tile", name + "_" + what + "_repeated",
                  {{"x", g}, {"reps", MilParam::i32s({1, 1, static_cast<int32_t>(rep), 1})}},
                  mil::FLOAT16, {t_, nk, rep, dk});
        return reshape(t, {t_, nv, dk}, name + "_" + what + "_heads_v");
    };
    auto per_token = [&](const MilValue& x, int64_t d, const std::string& what) {
        return reshape(x, {t_, nv, 1, d}, name + "_" + what + "_rows");
    };
    const float q_scale = num.delta_q_boost / std::sqrt(static_cast<float>(dk));
    const MilValue q = per_token(
        scalar_mul(
            l2_normalized(
                value_heads(token_heads(channels(0, nk * dk, "q"), nk, dk, name + "_q_t"), "q"),
                name + "_q_norm"),
            q_scale, name + "_q_scaled"),
        dk, "q");
    const MilValue k = per_token(
        l2_normalized(
            value_heads(token_heads(channels(nk * dk, nk * dk, "k"), nk, dk, name + "_k_t"), "k"),
            name + "_k_norm"),
        dk, "k");
    MilValue v =
        per_token(token_heads(channels(2 * nk * dk, nv * dv, "v"), nv, dv, name + "_v_t"), dv, "v");
    if (num.delta_v_boost != 1.0f) v = scalar_mul(v, num.delta_v_boost, name + "_v_scaled");

    // beta = sigmoid(b); decay = exp(-exp(A_log) softplus(a + dt_bias)), per token and head.
    auto per_head = [&](const MilValue& x,
                        const std::string& what) {  // [1, nv, 1, T] -> [T, nv, 1, 1]
        return reshape(transpose(reshape(x, {nv, t_}, name + "_" + what + "_flat"), {1, 0},
                                 name + "_" + what + "_t"),
                       {t_, nv, 1, 1}, name + "_" + what + "_rows");
    };
    const MilValue beta =
        per_head(unary("sigmoid", value(node.inputs.at(1)), name + "_beta"), "beta");
    const MilValue dt =
        pkg_.weights.vector(b_, node.bias, 0, 1, 0, nv, {1, nv, 1, 1}, name + "_dt_bias");
    const MilValue shifted = binary("add", value(node.inputs.at(2)), dt, name + "_dt");
    std::vector<float> rate =
        weight_values(pkg_.program.weights.at(static_cast<size_t>(node.weight)));
    for (float& r : rate) r = -std::exp(r);
    const MilValue neg_rate = b_.const_f16(name + "_neg_rate", {1, nv, 1, 1}, rate);
    const MilValue decay = per_head(
        unary("exp", binary("mul", softplus(shifted, name + "_softplus"), neg_rate, name + "_g"),
              name + "_decay"),
        "decay");

    // The recurrence, one token after the other, on rows split off once per
    // tensor. beta scales the key of the write: k (beta (v - S'k))^T.
    const auto ai = static_cast<int32_t>(at);
    const auto nvi = static_cast<int32_t>(nv), dki = static_cast<int32_t>(dk),
               dvi = static_cast<int32_t>(dv);
    MilValue s = slice(c.input, {ai, 0, 0, 0}, {ai + 1, nvi, dki, dvi}, name + "_state_in");
    const MilValue beta_k = binary("mul", k, beta, name + "_beta_k");
    auto rows = [&](const MilValue& x, const std::string& what) {
        if (t_ == 1) return std::vector<MilValue>{x};
        std::vector<int64_t> shape = x.shape;
        shape[0] = 1;
        std::vector<MilValue> parts;
        for (int64_t t = 0; t < t_; ++t)
            parts.push_back({fmt::format("{}_{}{}", name, what, t), x.dtype, shape});
        return b_.op_multi(
            "split", name + "_" + what + "_rows",
            {{"x", x}, {"num_splits", MilParam::i32(ti)}, {"axis", MilParam::i32(0)}}, parts);
    };
    auto matmul = [&](const MilValue& x, const MilValue& y, bool tx, std::vector<int64_t> shape,
                      const std::string& what) {
        return b_.op("matmul", what,
                     {{"x", x},
                      {"y", y},
                      {"transpose_x", MilParam::boolean(tx)},
                      {"transpose_y", MilParam::boolean(false)}},
                     mil::FLOAT16, std::move(shape));
    };
    const std::vector<MilValue> qs = rows(q, "q"), ks = rows(k, "k"), vs = rows(v, "v"),
                                bks = rows(beta_k, "beta_k"), decays = rows(decay, "decay");
    std::vector<MilValue> outs;
    for (size_t t = 0; t < qs.size(); ++t) {
        const std::string p = fmt::format("{}_t{}", name, t);
        s = binary("mul", s, decays[t], p + "_decayed");
        const MilValue recalled = matmul(ks[t], s, false, {1, nv, 1, dv}, p + "_recalled");
        const MilValue error = binary("sub", vs[t], recalled, p + "_error");
        s = binary("add", s, matmul(bks[t], error, true, {1, nv, dk, dv}, p + "_write"),
                   p + "_state");
        outs.push_back(matmul(qs[t], s, false, {1, nv, 1, dv}, p + "_out"));
    }
    c.updated[static_cast<size_t>(at)] = s;
    const MilValue o = outs.size() == 1 ? outs[0]
                                        : b_.op("concat", name + "_rows",
                                                {{"values", outs},
                                                 {"axis", MilParam::i32(0)},
                                                 {"interleave", MilParam::boolean(false)}},
                                                mil::FLOAT16, {t_, nv, 1, dv});
    // [T, nv, 1, dv] -> [1, nv dv, 1, T]. The boosts are undone here, unless
    // only RMSNorms read the result: they take it boosted (it would be tiny
    // enough to flush), with their epsilon boosted to match.
    const MilValue cols = transpose(reshape(o, {t_, nv * dv}, name + "_flat"), {1, 0}, name + "_t");
    const float boost = num.delta_q_boost * num.delta_v_boost;
    const auto id = static_cast<ir::ValueId>(&node - fn_.nodes.data());
    const bool only_norms = std::ranges::all_of(fn_.nodes, [&](const ir::Node& n) {
        return n.op == ir::Op::rms_norm || std::ranges::find(n.inputs, id) == n.inputs.end();
    });
    if (boost == 1.0f || only_norms) {
        if (boost != 1.0f) boosted_[id] = boost;
        return reshape(cols, {1, nv * dv, 1, t_}, name);
    }
    return scalar_mul(reshape(cols, {1, nv * dv, 1, t_}, name + "_boosted"), 1.0f / boost, name);
}

}  // namespace anelm::lower
