// Qwen3.5's text model: Gated DeltaNet layers (linear attention with a
// recurrent state) and, every few layers, full attention whose output is
// gated per head; each followed by a SwiGLU MLP. Norm gains are stored as
// offsets from one, but the gated norm inside DeltaNet's.
#include "ir/builder.h"
#include "models/families.h"

namespace anelm {

namespace {

struct Layer {
    const ModelSpec& spec;
    ir::Builder& b;
    int64_t il;
    ir::ValueId pos;
    float eps;

    std::string w(const char* s) const { return layer_weight(il, s); }
    std::string v(const char* s) const { return value_name(il, s); }

    // q_proj holds, for each head, its query then its gate.
    ir::ValueId attention(ir::ValueId h, int32_t slot) const {
        const int64_t hd = spec.head_dim;
        const std::string q_proj = w("self_attn.q_proj.weight");
        ir::ValueId q = b.linear_strided_rows(h, q_proj, 0, hd, 2 * hd, v("attn_q"));
        const ir::ValueId gate = b.linear_strided_rows(h, q_proj, hd, hd, 2 * hd, v("attn_gate"));
        ir::ValueId k = b.linear(h, w("self_attn.k_proj.weight"), "", v("attn_k"));
        const ir::ValueId vv = b.linear(h, w("self_attn.v_proj.weight"), "", v("attn_v"));
        q = b.rms_norm(q, w("self_attn.q_norm.weight"), eps, v("attn_q_norm"), 1.0f);
        k = b.rms_norm(k, w("self_attn.k_norm.weight"), eps, v("attn_k_norm"), 1.0f);
        q = b.rope(q, pos, 0, spec.n_head, hd, v("attn_q_rope"));
        k = b.rope(k, pos, 0, spec.n_head_kv, hd, v("attn_k_rope"));
        ir::Attrs attn = attention_attrs(spec, hd);
        attn.layer = slot;
        const ir::ValueId a = b.attention(q, k, vv, pos, attn, v("attn"));
        return b.linear(b.sigmoid_mul(gate, a, v("attn_gated")), w("self_attn.o_proj.weight"), "",
                        v("attn_out"));
    }

    ir::ValueId delta_net(ir::ValueId h, int32_t slot) const {
        const ir::ValueId qkv = b.linear(h, w("linear_attn.in_proj_qkv.weight"), "", v("ssm_qkv"));
        const ir::ValueId z = b.linear(h, w("linear_attn.in_proj_z.weight"), "", v("ssm_z"));
        const ir::ValueId beta = b.linear(h, w("linear_attn.in_proj_b.weight"), "", v("ssm_b"));
        const ir::ValueId alpha = b.linear(h, w("linear_attn.in_proj_a.weight"), "", v("ssm_a"));
        ir::Attrs conv;
        conv.state = 1;
        conv.layer = slot;
        const ir::ValueId mixed =
            b.silu(b.causal_conv(qkv, pos, w("linear_attn.conv1d.weight"), "", conv, v("ssm_conv")),
                   v("ssm_conv_act"));
        ir::Attrs delta;
        delta.n_head = spec.delta_n_head_v;
        delta.n_head_kv = spec.delta_n_head_k;
        delta.head_dim = spec.delta_head_dim_k;
        delta.value_dim = spec.delta_head_dim_v;
        delta.heads_tiled = spec.delta_heads_tiled;
        delta.state = 2;
        delta.layer = slot;
        const ir::ValueId o = b.gated_delta(mixed, beta, alpha, pos, w("linear_attn.A_log"),
                                            w("linear_attn.dt_bias"), delta, v("ssm_delta"));
        const ir::ValueId normed = b.rms_norm(o, w("linear_attn.norm.weight"), eps, v("ssm_norm"));
        return b.linear(b.silu_mul(z, normed, v("ssm_gated")), w("linear_attn.out_proj.weight"), "",
                        v("ssm_out"));
    }
};

}  // namespace

void build_qwen3_5_function(const ModelSpec& spec, const WeightStore& weights,
                            const FunctionShape& shape, ir::Program& program) {
    ir::Function& fn = add_function(program, shape);
    ir::Builder b(program, fn, weights);
    const float eps = static_cast<float>(spec.rms_norm_eps);

    const ir::ValueId ids = b.input("input_ids");
    const ir::ValueId pos = b.input("position_ids");
    ir::ValueId x = b.embed(ids, "model.embed_tokens.weight", "token_embd");

    int32_t n_attention = 0, n_delta = 0;
    for (int64_t il = 0; il < spec.n_layer; ++il) {
        const Layer layer{spec, b, il, pos, eps};
        const ir::ValueId h =
            b.rms_norm(x, layer.w("input_layernorm.weight"), eps, layer.v("attn_norm"), 1.0f);
        const ir::ValueId mixed = spec.delta_layers[static_cast<size_t>(il)]
                                      ? layer.delta_net(h, n_delta++)
                                      : layer.attention(h, n_attention++);
        x = b.add(x, mixed, layer.v("ffn_inp"));

        const ir::ValueId n = b.rms_norm(x, layer.w("post_attention_layernorm.weight"), eps,
                                         layer.v("ffn_norm"), 1.0f);
        const ir::ValueId gate =
            b.linear(n, layer.w("mlp.gate_proj.weight"), "", layer.v("ffn_gate"));
        const ir::ValueId up = b.linear(n, layer.w("mlp.up_proj.weight"), "", layer.v("ffn_up"));
        const ir::ValueId act = b.silu_mul(gate, up, layer.v("ffn_act"));
        x = b.add(x, b.linear(act, layer.w("mlp.down_proj.weight"), "", layer.v("ffn_out")),
                  layer.v("l_out"));
    }

    b.output(lm_head(b, spec, shape, x, "model.norm.weight", 1.0f));
}

}  // namespace anelm
