// Rotary embedding and attention, written out for the ANE: cos/sin tables baked
// for every position of the context and gathered by position_ids; K and V
// written into the KV state at current_pos; scores against all n_ctx cached
// positions with the host's causal mask (future slots are masked, the cache
// starts zeroed). Grouped-query heads share their KV head by folding the group
// into the query rows, which is the repeat of KV heads without copying them.
#include <cmath>
#include <limits>

#include "base/error.h"
#include "base/half.h"
#include "lower/function_lowering.h"

namespace anelm::lower {

namespace mil = coreml::mil;
using coreml::MilParam;

std::pair<MilValue, MilValue> FunctionLowering::rope_rows(int32_t rope) {
    if (const auto it = rope_rows_.find(rope); it != rope_rows_.end()) return it->second;
    const ir::RopeFreqs& freqs = pkg_.program.ropes.at(static_cast<size_t>(rope));
    if (freqs.interleaved)
        fail(
            "rotary embedding {} pairs interleaved dimensions; the ANE lowering needs the "
            "half-split form (run passes::rope_halves first)",
            rope);
    const auto half = static_cast<int64_t>(freqs.inv_freq.size());
    const int64_t hd = 2 * half;
    auto& tables = pkg_.rope_tables[rope];
    if (!tables.first.has_type()) {
        auto cos = std::make_shared<std::vector<uint16_t>>(static_cast<size_t>(pkg_.n_ctx * hd));
        auto sin = std::make_shared<std::vector<uint16_t>>(cos->size());
        for (int64_t p = 0; p < pkg_.n_ctx; ++p)
            for (int64_t i = 0; i < hd; ++i) {
                const float angle =
                    static_cast<float>(p) * freqs.inv_freq[static_cast<size_t>(i % half)];
                (*cos)[static_cast<size_t>(p * hd + i)] = f32_to_f16(std::cos(angle));
                (*sin)[static_cast<size_t>(p * hd + i)] = f32_to_f16(std::sin(angle));
            }
        auto bytes = [](const std::vector<uint16_t>& v) {
            return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()),
                                            v.size() * 2);
        };
        tables.first =
            coreml::blob_value(pkg_.blobs, mil::FLOAT16, {pkg_.n_ctx, hd}, bytes(*cos), cos);
        tables.second =
            coreml::blob_value(pkg_.blobs, mil::FLOAT16, {pkg_.n_ctx, hd}, bytes(*sin), sin);
    }
    auto rows = [&](const mil::Value& table, const std::string& what) {
        const std::string base = fmt::format("rope{}_{}", rope, what);
        const MilValue t = b_.const_value(base + "_table", table);
        const MilValue g = b_.op("gather", base + "_rows",
                                 {{"x", t},
                                  {"indices", position_ids},
                                  {"axis", MilParam::i32(0)},
                                  {"batch_dims", MilParam::i32(0)},
                                  {"validate_indices", MilParam::boolean(false)}},
                                 mil::FLOAT16, {t_, hd});
        return reshape(transpose(g, {1, 0}, base + "_t"), {1, 1, hd, t_}, base);
    };
    const auto result = std::make_pair(rows(tables.first, "cos"), rows(tables.second, "sin"));
    rope_rows_[rope] = result;
    return result;
}

MilValue FunctionLowering::rope(const ir::Node& node, const std::string& name) {
    const MilValue& x = value(node.inputs.at(0));  // [1, n_head * head_dim, 1, T]
    const int64_t n = node.attrs.n_head;
    const int64_t hd = node.attrs.head_dim;
    const auto [cos, sin] = rope_rows(node.attrs.rope);
    const MilValue heads = reshape(x, {1, n, hd, t_}, name + "_heads");
    // A partial rotation (Qwen3.5) turns the leading dims of each head only.
    const int64_t rd = cos.shape.at(2);
    const auto h = static_cast<int32_t>(rd / 2);
    const auto ni = static_cast<int32_t>(n);
    const auto ti = static_cast<int32_t>(t_);
    const MilValue turned =
        rd == hd ? heads : slice(heads, {0, 0, 0, 0}, {1, ni, 2 * h, ti}, name + "_turned");
    const MilValue x1 = slice(turned, {0, 0, 0, 0}, {1, ni, h, ti}, name + "_x1");
    const MilValue x2 = slice(turned, {0, 0, h, 0}, {1, ni, 2 * h, ti}, name + "_x2");
    const MilValue rotated =
        b_.op("concat", name + "_rotated",
              {{"values", std::vector<MilValue>{scalar_mul(x2, -1.0f, name + "_neg"), x1}},
               {"axis", MilParam::i32(2)},
               {"interleave", MilParam::boolean(false)}},
              mil::FLOAT16, turned.shape);
    const MilValue a = binary("mul", turned, cos, name + "_cos");
    const MilValue c = binary("mul", rotated, sin, name + "_sin");
    MilValue out = binary("add", a, c, name + "_sum");
    if (rd != hd) {
        const MilValue kept =
            slice(heads, {0, 0, 2 * h, 0}, {1, ni, static_cast<int32_t>(hd), ti}, name + "_kept");
        out = b_.op("concat", name + "_joined",
                    {{"values", std::vector<MilValue>{out, kept}},
                     {"axis", MilParam::i32(2)},
                     {"interleave", MilParam::boolean(false)}},
                    mil::FLOAT16, heads.shape);
    }
    return reshape(out, {1, n * hd, 1, t_}, name);
}

MilValue FunctionLowering::kv_write(const std::string& state, const MilValue& update, int64_t slot,
                                    const std::string& name) {
    const coreml::MilValue& state_value = state_values.at(state);
    const auto& s = state_value.shape;  // [2 n_layer, n_head_kv, n_ctx, head_dim]
    const MilValue head = b_.const_i32(name + "_at", {2}, {static_cast<int32_t>(slot), 0});
    const MilValue tail = b_.const_i32(name + "_tail", {1}, {0});
    const MilValue begin = b_.op("concat", name + "_begin",
                                 {{"values", std::vector<MilValue>{head, current_pos, tail}},
                                  {"axis", MilParam::i32(0)},
                                  {"interleave", MilParam::boolean(false)}},
                                 mil::INT32, {4});
    const MilValue end =
        b_.op("add", name + "_end",
              {{"x", begin},
               {"y", MilParam::i32s({1, static_cast<int32_t>(s[1]), static_cast<int32_t>(t_),
                                     static_cast<int32_t>(s[3])})}},
              mil::INT32, {4});
    const MilValue read =
        b_.op("read_state", name + "_read", {{"input", state_value}}, mil::FLOAT16, s);
    const MilValue updated =
        b_.op("slice_update", name + "_update",
              {{"x", read}, {"update", update}, {"begin", begin}, {"end", end}}, mil::FLOAT16, s);
    return b_.op("write_state", name, {{"input", state_value}, {"data", updated}}, mil::FLOAT16, s);
}

MilValue FunctionLowering::window_mask(int64_t window) {
    if (const auto it = window_masks_.find(window); it != window_masks_.end()) return it->second;
    // Keys older than the window (position - key >= window) get -inf; the
    // others keep the causal mask's value.
    const std::string base = fmt::format("window{}_mask", window);
    const int64_t c = pkg_.n_ctx;
    std::vector<int32_t> keys(static_cast<size_t>(c));
    for (int64_t k = 0; k < c; ++k) keys[static_cast<size_t>(k)] = static_cast<int32_t>(k);
    const MilValue key_pos = b_.const_i32(base + "_keys", {1, c}, keys);
    const MilValue query_pos = reshape(position_ids, {t_, 1}, base + "_queries");
    const MilValue age =
        b_.op("sub", base + "_age", {{"x", query_pos}, {"y", key_pos}}, mil::INT32, {t_, c});
    const MilValue inside =
        b_.op("less", base + "_inside",
              {{"x", age}, {"y", MilParam::i32(static_cast<int32_t>(window))}}, mil::BOOL, {t_, c});
    // select's type is the broadcast of a and b only (not of cond), so a is
    // the causal mask itself: a scalar a would make the declared [T, C] wrong.
    const MilValue causal = reshape(causal_mask, {t_, c}, base + "_causal");
    const MilValue rows = b_.op("select", base + "_rows",
                                {{"cond", inside},
                                 {"a", causal},
                                 {"b", MilParam::fp16(-std::numeric_limits<float>::infinity())}},
                                mil::FLOAT16, {t_, c});
    const MilValue mask = reshape(rows, {1, 1, t_, c}, base);
    window_masks_[window] = mask;
    return mask;
}

KvLayout kv_layout(const ir::Program& program) {
    std::vector<int32_t> caches;
    for (size_t i = 0; i < program.states.size(); ++i)
        if (!is_carried_state(program, static_cast<int32_t>(i)))
            caches.push_back(static_cast<int32_t>(i));
    if (caches.empty()) fail("the program has no KV state");
    KvLayout kv;
    kv.state = program.states[static_cast<size_t>(caches[0])];
    int64_t width = kv.state.shape.at(3);
    for (int32_t c : caches)
        width = std::min(width, program.states[static_cast<size_t>(c)].shape.at(3));
    int64_t k_rows = 0;
    for (int32_t c : caches) {
        const auto& s = program.states[static_cast<size_t>(c)].shape;  // [2 layers, kvh, ctx, hd]
        if (s.at(1) != kv.state.shape[1] || s.at(2) != kv.state.shape[2] || s.at(3) % width != 0)
            fail("KV caches {} and {} differ in heads or context, or {} is not a multiple of {}",
                 kv.state.name, program.states[static_cast<size_t>(c)].name, s[3], width);
        k_rows += s[0] / 2 * (s[3] / width);
    }
    int64_t row = 0;
    for (int32_t c : caches) {
        const auto& s = program.states[static_cast<size_t>(c)].shape;
        const int64_t parts = s[3] / width;
        for (int64_t layer = 0; layer < s[0] / 2; ++layer, row += parts)
            kv.rows[{c, static_cast<int32_t>(layer)}] = {row, k_rows + row, parts};
    }
    kv.state.shape = {2 * k_rows, kv.state.shape[1], kv.state.shape[2], width};
    return kv;
}

MilValue FunctionLowering::cached(const MilValue& cache, int64_t row0, int64_t parts,
                                  int64_t n_head_kv, const std::string& name) {
    const auto& s = cache.shape;
    std::vector<MilValue> pieces;
    for (int64_t p = 0; p < parts; ++p)
        pieces.push_back(slice(cache, {static_cast<int32_t>(row0 + p), 0, 0, 0},
                               {static_cast<int32_t>(row0 + p + 1), static_cast<int32_t>(n_head_kv),
                                static_cast<int32_t>(s[2]), static_cast<int32_t>(s[3])},
                               parts == 1 ? name : fmt::format("{}_{}", name, p)));
    if (parts == 1) return pieces[0];
    return b_.op(
        "concat", name,
        {{"values", pieces}, {"axis", MilParam::i32(3)}, {"interleave", MilParam::boolean(false)}},
        mil::FLOAT16, {1, n_head_kv, s[2], s[3] * parts});
}

MilValue FunctionLowering::attention(const ir::Node& node, const std::string& name) {
    const ir::Attrs& a = node.attrs;
    const KvLayout& kv = pkg_.kv;
    const KvLayout::Rows rows = kv.rows.at({a.state, a.layer});
    const int64_t nh = a.n_head, nkv = a.n_head_kv, hd = a.head_dim, c = kv.state.shape.at(2);
    const int64_t rep = nh / nkv;
    const auto as_heads = [&](const MilValue& x, int64_t n, const std::string& what) {
        // [1, n hd, 1, T] -> [1, n, T, hd]
        return transpose(reshape(x, {1, n, hd, t_}, name + "_" + what + "_heads"), {0, 1, 3, 2},
                         name + "_" + what + "_t");
    };
    // A layer sharing another's K/V (shared_attention) writes none.
    if (node.op == ir::Op::attention) {
        const int64_t w = kv.state.shape[3];
        const auto write = [&](const MilValue& x, int64_t row0, const std::string& what) {
            for (int64_t p = 0; p < rows.parts; ++p) {
                const MilValue part =
                    rows.parts == 1 ? x
                                    : slice(x, {0, 0, 0, static_cast<int32_t>(p * w)},
                                            {1, static_cast<int32_t>(nkv), static_cast<int32_t>(t_),
                                             static_cast<int32_t>((p + 1) * w)},
                                            fmt::format("{}_{}_part{}", name, what, p));
                kv_write(kv.state.name, part, row0 + p,
                         rows.parts == 1 ? name + "_write_" + what
                                         : fmt::format("{}_write_{}{}", name, what, p));
            }
        };
        write(as_heads(value(node.inputs.at(1)), nkv, "k"), rows.k, "k");
        write(as_heads(value(node.inputs.at(2)), nkv, "v"), rows.v, "v");
    }
    const MilValue cache =
        b_.op("read_state", name + "_cache", {{"input", state_values.at(kv.state.name)}},
              mil::FLOAT16, kv.state.shape);
    const MilValue keys = cached(cache, rows.k, rows.parts, nkv, name + "_cached_k");
    const MilValue vals = cached(cache, rows.v, rows.parts, nkv, name + "_cached_v");

    const MilValue q =
        scalar_mul(as_heads(value(node.inputs.at(0)), nh, "q"), a.scale, name + "_q_scaled");
    const MilValue q_groups = reshape(q, {1, nkv, rep * t_, hd}, name + "_q_groups");
    const MilValue scores = b_.op("matmul", name + "_scores",
                                  {{"x", q_groups},
                                   {"y", keys},
                                   {"transpose_x", MilParam::boolean(false)},
                                   {"transpose_y", MilParam::boolean(true)}},
                                  mil::FLOAT16, {1, nkv, rep * t_, c});
    MilValue s = reshape(scores, {1, nh, t_, c}, name + "_scores_heads");
    if (a.softcap > 0) {
        const MilValue th = unary("tanh", scalar_mul(s, 1.0f / a.softcap, name + "_capped_in"),
                                  name + "_capped_tanh");
        s = scalar_mul(th, a.softcap, name + "_capped");
    }
    const MilValue mask = a.window > 0 && a.window < c ? window_mask(a.window) : causal_mask;
    const MilValue masked = binary("add", s, mask, name + "_masked");
    const MilValue probs =
        b_.op("softmax", name + "_probs", {{"x", masked}, {"axis", MilParam::i32(-1)}},
              mil::FLOAT16, masked.shape);
    const MilValue p_groups = reshape(probs, {1, nkv, rep * t_, c}, name + "_probs_groups");
    const MilValue ctx = b_.op("matmul", name + "_context",
                               {{"x", p_groups},
                                {"y", vals},
                                {"transpose_x", MilParam::boolean(false)},
                                {"transpose_y", MilParam::boolean(false)}},
                               mil::FLOAT16, {1, nkv, rep * t_, hd});
    const MilValue heads = reshape(ctx, {1, nh, t_, hd}, name + "_context_heads");
    return reshape(transpose(heads, {0, 1, 3, 2}, name + "_context_t"), {1, nh * hd, 1, t_}, name);
}

}  // namespace anelm::lower
