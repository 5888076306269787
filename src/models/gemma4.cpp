// Gemma 4 text (E2B, E4B): Gemma 3's norms around attention and MLP but with
// plain gains, sliding-window layers of head_dim and full layers of
// global_head_dim whose rope turns a fraction of its frequencies
// ("proportional"), unscaled attention over RMS-normed q, k and v, the last
// layers attending with an earlier layer's K/V, per-layer embeddings gated in
// after every MLP, a per-layer scalar on the residual, and a logit softcap.
#include <cmath>

#include "base/error.h"
#include "io/tensor_values.h"
#include "ir/builder.h"
#include "models/families.h"

namespace anelm {

namespace {

bool sliding(const ModelSpec& spec, int64_t il) {
    return spec.sliding_layers[static_cast<size_t>(il)];
}

// Layers below this one compute their own K/V.
int64_t first_shared(const ModelSpec& spec) {
    return spec.n_layer - spec.n_kv_shared_layers;
}

int64_t own_layers(const ModelSpec& spec, bool of_sliding) {
    int64_t n = 0;
    for (int64_t il = 0; il < first_shared(spec); ++il) n += sliding(spec, il) == of_sliding;
    return n;
}

// Where a layer's K/V live: the full layers' cache is state 0 and the sliding
// layers' the next (their heads differ in size); a KV-sharing layer reads its
// source layer's slot.
struct KvSlot {
    int32_t state;
    int32_t layer;
};

KvSlot kv_slot(const ModelSpec& spec, int64_t il) {
    const int64_t source = kv_source_layer(spec, il);
    const bool kind = sliding(spec, source);
    int32_t slot = 0;
    for (int64_t j = 0; j < source; ++j) slot += sliding(spec, j) == kind;
    const int32_t state = kind && own_layers(spec, false) > 0 ? 1 : 0;
    return {state, slot};
}

// The value transformers' Gemma4TextDecoderLayer multiplies its output by.
float layer_scalar(const WeightStore& weights, int64_t il) {
    const std::string name = layer_weight(il, "layer_scalar");
    float value = 0;
    read_f32(weights.get(name, {1}), 0, 1, &value);
    return value;
}

// Every layer's per-layer input, side by side [T, layers * per_layer_dim]:
// the token's row of its own table, scaled, plus the projection of the
// embedding, normed per layer, both times 1/sqrt(2).
ir::ValueId per_layer_inputs(ir::Builder& b, const ModelSpec& spec, const WeightStore& weights,
                             ir::ValueId ids, ir::ValueId embedded) {
    const char* table = "model.embed_tokens_per_layer.weight";
    const auto eps = static_cast<float>(spec.rms_norm_eps);
    ir::ValueId tokens = b.embed(ids, table, "per_layer_token_embd");
    tokens = b.scale(tokens,
                     scale_as_stored(std::sqrt(static_cast<double>(spec.per_layer_dim)),
                                     weights.get(table).dtype),
                     "per_layer_token_embd_scaled");
    ir::ValueId proj =
        b.linear(embedded, "model.per_layer_model_projection.weight", "", "per_layer_model_proj");
    proj = b.scale(proj, static_cast<float>(1.0 / std::sqrt(static_cast<double>(spec.n_embd))),
                   "per_layer_model_proj_scaled");
    proj = b.rms_norm(proj, "model.per_layer_projection_norm.weight", eps, "per_layer_proj_norm");
    return b.scale(b.add(proj, tokens, "per_layer_sum"), static_cast<float>(1.0 / std::sqrt(2.0)),
                   "per_layer_inp");
}

}  // namespace

void add_gemma4_caches(const ModelSpec& spec, int64_t n_ctx, ir::Program& program) {
    const int64_t full = own_layers(spec, false), window = own_layers(spec, true);
    if (full > 0)
        program.states.push_back(
            {"model_model_kv_cache_0",
             DType::f16,
             {2 * full, spec.n_head_kv, n_ctx,
              spec.global_head_dim > 0 ? spec.global_head_dim : spec.head_dim}});
    if (window > 0)
        program.states.push_back({fmt::format("model_model_kv_cache_{}", full > 0 ? 1 : 0),
                                  DType::f16,
                                  {2 * window, spec.n_head_kv, n_ctx, spec.head_dim}});
}

void build_gemma4_function(const ModelSpec& spec, const WeightStore& weights,
                           const FunctionShape& shape, ir::Program& program) {
    if (static_cast<int64_t>(spec.sliding_layers.size()) != spec.n_layer)
        fail("{}: {} layer types for {} layers", spec.source, spec.sliding_layers.size(),
             spec.n_layer);
    const int32_t rope_sliding = sliding_rope(spec, program);
    ir::Function& fn = add_function(program, shape);
    ir::Builder b(program, fn, weights);
    const auto eps = static_cast<float>(spec.rms_norm_eps);

    const ir::ValueId ids = b.input("input_ids");
    const ir::ValueId pos = b.input("position_ids");
    ir::ValueId x = scaled_embedding(b, spec, weights, ids);
    const ir::ValueId per_layer =
        spec.per_layer_dim > 0 ? per_layer_inputs(b, spec, weights, ids, x) : -1;

    for (int64_t il = 0; il < spec.n_layer; ++il) {
        auto w = [&](const char* s) { return layer_weight(il, s); };
        auto v = [&](const char* s) { return value_name(il, s); };
        auto norm = [&](ir::ValueId in, const char* weight, const char* name) {
            return b.rms_norm(in, w(weight), eps, v(name));
        };
        const bool is_sliding = sliding(spec, il);
        const int64_t hd = layer_head_dim(spec, il);
        const int32_t rope = is_sliding ? rope_sliding : 0;

        ir::Attrs attn = attention_attrs(spec, hd);
        attn.scale = 1.0f;  // q and k are RMS-normed instead
        attn.window = is_sliding ? spec.sliding_window : 0;
        const KvSlot slot = kv_slot(spec, il);
        attn.state = slot.state;
        attn.layer = slot.layer;

        ir::ValueId h = norm(x, "input_layernorm.weight", "attn_norm");
        ir::ValueId q = b.linear(h, w("self_attn.q_proj.weight"), "", v("attn_q"));
        q = norm(q, "self_attn.q_norm.weight", "attn_q_norm");
        q = b.rope(q, pos, rope, spec.n_head, hd, v("attn_q_rope"));
        ir::ValueId a;
        if (kv_source_layer(spec, il) == il) {
            ir::ValueId k = b.linear(h, w("self_attn.k_proj.weight"), "", v("attn_k"));
            ir::ValueId vv = b.linear(h, w("self_attn.v_proj.weight"), "", v("attn_v"));
            k = norm(k, "self_attn.k_norm.weight", "attn_k_norm");
            k = b.rope(k, pos, rope, spec.n_head_kv, hd, v("attn_k_rope"));
            vv = b.rms_norm_plain(vv, hd, eps, v("attn_v_norm"));
            a = b.attention(q, k, vv, pos, attn, v("attn"));
        } else {
            a = b.shared_attention(q, pos, attn, v("attn"));
        }
        a = b.linear(a, w("self_attn.o_proj.weight"), "", v("attn_out"));
        a = norm(a, "post_attention_layernorm.weight", "attn_post_norm");
        x = b.add(x, a, v("ffn_inp"));

        h = norm(x, "pre_feedforward_layernorm.weight", "ffn_norm");
        const ir::ValueId gate = b.linear(h, w("mlp.gate_proj.weight"), "", v("ffn_gate"));
        const ir::ValueId up = b.linear(h, w("mlp.up_proj.weight"), "", v("ffn_up"));
        ir::ValueId down = b.linear(b.gelu_tanh_mul(gate, up, v("ffn_act")),
                                    w("mlp.down_proj.weight"), "", v("ffn_out"));
        down = norm(down, "post_feedforward_layernorm.weight", "ffn_post_norm");
        x = b.add(x, down, v("ffn_res"));

        if (spec.per_layer_dim > 0) {
            const ir::ValueId mine = b.columns(per_layer, il * spec.per_layer_dim,
                                               spec.per_layer_dim, v("per_layer_inp"));
            ir::ValueId g = b.linear(x, w("per_layer_input_gate.weight"), "", v("inp_gate"));
            g = b.gelu_tanh_mul(g, mine, v("inp_gated"));
            g = b.linear(g, w("per_layer_projection.weight"), "", v("proj"));
            g = norm(g, "post_per_layer_input_norm.weight", "post_norm");
            x = b.add(x, g, v("per_layer_res"));
        }
        x = b.scale(x, layer_scalar(weights, il), v("l_out"));
    }

    const ir::ValueId raw =
        lm_head(b, spec, shape, x, "model.norm.weight", 0.0f,
                spec.final_logit_softcapping > 0 ? "logits_uncapped" : "logits");
    if (spec.final_logit_softcapping > 0)
        b.output(b.softcap(raw, static_cast<float>(spec.final_logit_softcapping), "logits"));
    else
        b.output(raw);
}

}  // namespace anelm
