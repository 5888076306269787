// Gemma 3 text: scaled embeddings, (1 + w) RMSNorm gains, norms before and after
// both attention and MLP, q/k norms, a GELU-tanh gated MLP, sliding-window layers
// with their own rope base, and optional logit soft-capping.
#include <cmath>

#include "base/error.h"
#include "ir/builder.h"
#include "models/families.h"

namespace anelm {

void build_gemma3_function(const ModelSpec& spec, const WeightStore& weights,
                           const FunctionShape& shape, ir::Program& program) {
    if (static_cast<int64_t>(spec.sliding_layers.size()) != spec.n_layer)
        fail("{}: {} layer types for {} layers", spec.source, spec.sliding_layers.size(),
             spec.n_layer);
    if (spec.attention_bias) fail("{}: gemma3 with attention biases is not supported", spec.source);
    const int32_t rope_local = sliding_rope(spec, program);
    ir::Function& fn = add_function(program, shape);
    ir::Builder b(program, fn, weights);
    const float eps = static_cast<float>(spec.rms_norm_eps);
    constexpr float gain_offset = 1.0f;  // Gemma's norms scale by (1 + w)

    ir::Attrs attn = attention_attrs(spec, spec.head_dim);
    const double scalar = spec.query_pre_attn_scalar > 0 ? spec.query_pre_attn_scalar
                                                         : static_cast<double>(spec.head_dim);
    attn.scale = static_cast<float>(1.0 / std::sqrt(scalar));
    attn.softcap = static_cast<float>(spec.attn_logit_softcapping);

    const ir::ValueId ids = b.input("input_ids");
    const ir::ValueId pos = b.input("position_ids");
    ir::ValueId x = scaled_embedding(b, spec, weights, ids);

    for (int64_t il = 0; il < spec.n_layer; ++il) {
        auto w = [&](const char* s) { return layer_weight(il, s); };
        auto v = [&](const char* s) { return value_name(il, s); };
        auto norm = [&](ir::ValueId in, const char* weight, const char* name) {
            return b.rms_norm(in, w(weight), eps, v(name), gain_offset);
        };
        const bool sliding = spec.sliding_layers[static_cast<size_t>(il)];
        const int32_t rope = sliding ? rope_local : 0;

        ir::ValueId h = norm(x, "input_layernorm.weight", "attn_norm");
        ir::ValueId q = b.linear(h, w("self_attn.q_proj.weight"), "", v("attn_q"));
        ir::ValueId k = b.linear(h, w("self_attn.k_proj.weight"), "", v("attn_k"));
        ir::ValueId vv = b.linear(h, w("self_attn.v_proj.weight"), "", v("attn_v"));
        q = norm(q, "self_attn.q_norm.weight", "attn_q_norm");
        k = norm(k, "self_attn.k_norm.weight", "attn_k_norm");
        q = b.rope(q, pos, rope, spec.n_head, spec.head_dim, v("attn_q_rope"));
        k = b.rope(k, pos, rope, spec.n_head_kv, spec.head_dim, v("attn_k_rope"));
        attn.layer = static_cast<int32_t>(il);
        attn.window = sliding ? spec.sliding_window : 0;
        ir::ValueId a = b.attention(q, k, vv, pos, attn, v("attn"));
        a = b.linear(a, w("self_attn.o_proj.weight"), "", v("attn_out"));
        a = norm(a, "post_attention_layernorm.weight", "attn_post_norm");
        x = b.add(x, a, v("ffn_inp"));

        h = norm(x, "pre_feedforward_layernorm.weight", "ffn_norm");
        ir::ValueId gate = b.linear(h, w("mlp.gate_proj.weight"), "", v("ffn_gate"));
        ir::ValueId up = b.linear(h, w("mlp.up_proj.weight"), "", v("ffn_up"));
        ir::ValueId act = b.gelu_tanh_mul(gate, up, v("ffn_act"));
        ir::ValueId down = b.linear(act, w("mlp.down_proj.weight"), "", v("ffn_out"));
        down = norm(down, "post_feedforward_layernorm.weight", "ffn_post_norm");
        x = b.add(x, down, v("l_out"));
    }

    if (spec.final_logit_softcapping > 0) {
        const ir::ValueId raw =
            lm_head(b, spec, shape, x, "model.norm.weight", gain_offset, "logits_uncapped");
        b.output(b.softcap(raw, static_cast<float>(spec.final_logit_softcapping), "logits"));
    } else {
        b.output(lm_head(b, spec, shape, x, "model.norm.weight", gain_offset));
    }
}

}  // namespace anelm
