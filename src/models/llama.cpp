// Llama, Qwen2 (q/k/v bias) and Qwen3 (q/k RMSNorm): one pre-norm decoder.
#include "base/error.h"
#include "ir/builder.h"
#include "models/families.h"

namespace anelm {

void build_llama_function(const ModelSpec& spec, const WeightStore& weights, const FunctionShape& shape,
                          ir::Program& program) {
    ir::Function& fn = add_function(program, shape);
    ir::Builder b(program, fn, weights);
    const float eps = static_cast<float>(spec.rms_norm_eps);

    ir::Attrs attn = attention_attrs(spec, spec.head_dim);

    const ir::ValueId ids = b.input("input_ids");
    const ir::ValueId pos = b.input("position_ids");
    ir::ValueId x = b.embed(ids, "model.embed_tokens.weight", "token_embd");

    for (int64_t il = 0; il < spec.n_layer; ++il) {
        auto w = [&](const char* s) { return layer_weight(il, s); };
        auto v = [&](const char* s) { return value_name(il, s); };
        const bool bias = spec.attention_bias;

        ir::ValueId h = b.rms_norm(x, w("input_layernorm.weight"), eps, v("attn_norm"));
        ir::ValueId q = b.linear(h, w("self_attn.q_proj.weight"), bias ? w("self_attn.q_proj.bias") : "", v("attn_q"));
        ir::ValueId k = b.linear(h, w("self_attn.k_proj.weight"), bias ? w("self_attn.k_proj.bias") : "", v("attn_k"));
        ir::ValueId vv = b.linear(h, w("self_attn.v_proj.weight"), bias ? w("self_attn.v_proj.bias") : "", v("attn_v"));
        if (spec.qk_norm) {
            q = b.rms_norm(q, w("self_attn.q_norm.weight"), eps, v("attn_q_norm"));
            k = b.rms_norm(k, w("self_attn.k_norm.weight"), eps, v("attn_k_norm"));
        }
        q = b.rope(q, pos, 0, spec.n_head, spec.head_dim, v("attn_q_rope"));
        k = b.rope(k, pos, 0, spec.n_head_kv, spec.head_dim, v("attn_k_rope"));
        attn.layer = static_cast<int32_t>(il);
        ir::ValueId a = b.attention(q, k, vv, pos, attn, v("attn"));
        a = b.linear(a, w("self_attn.o_proj.weight"),
                     spec.attention_out_bias ? w("self_attn.o_proj.bias") : "", v("attn_out"));
        x = b.add(x, a, v("ffn_inp"));

        h = b.rms_norm(x, w("post_attention_layernorm.weight"), eps, v("ffn_norm"));
        ir::ValueId gate = b.linear(h, w("mlp.gate_proj.weight"), "", v("ffn_gate"));
        ir::ValueId up = b.linear(h, w("mlp.up_proj.weight"), "", v("ffn_up"));
        ir::ValueId act = b.silu_mul(gate, up, v("ffn_act"));
        ir::ValueId down = b.linear(act, w("mlp.down_proj.weight"), "", v("ffn_out"));
        x = b.add(x, down, v("l_out"));
    }

    b.output(lm_head(b, spec, shape, x, "model.norm.weight"));
}

}  // namespace anelm
