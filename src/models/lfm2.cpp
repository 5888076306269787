// LFM2 and LFM2.5: pre-norm layers that are either attention (Q/K norms) or a
// short-convolution block, each followed by a SwiGLU feed-forward.
#include "ir/builder.h"
#include "models/families.h"

namespace anelm {

void build_lfm2_function(const ModelSpec& spec, const WeightStore& weights,
                         const FunctionShape& shape, ir::Program& program) {
    ir::Function& fn = add_function(program, shape);
    ir::Builder b(program, fn, weights);
    const float eps = static_cast<float>(spec.rms_norm_eps);
    const int64_t d = spec.n_embd;

    ir::Attrs attn = attention_attrs(spec, spec.head_dim);
    ir::Attrs conv;
    conv.state = 1;

    const ir::ValueId ids = b.input("input_ids");
    const ir::ValueId pos = b.input("position_ids");
    ir::ValueId x = b.embed(ids, "model.embed_tokens.weight", "token_embd");

    int32_t n_attention = 0, n_conv = 0;
    for (int64_t il = 0; il < spec.n_layer; ++il) {
        auto w = [&](const char* s) { return layer_weight(il, s); };
        auto v = [&](const char* s) { return value_name(il, s); };

        const ir::ValueId h = b.rms_norm(x, w("operator_norm.weight"), eps, v("attn_norm"));
        ir::ValueId mixed;
        if (spec.conv_layers[static_cast<size_t>(il)]) {
            // in_proj packs three outputs: B, C and x, in that order.
            const std::string in_proj = w("conv.in_proj.weight");
            const std::string in_bias = spec.conv_bias ? w("conv.in_proj.bias") : "";
            const ir::ValueId gate_b = b.linear_rows(h, in_proj, in_bias, 0, d, v("shortconv_b"));
            const ir::ValueId gate_c = b.linear_rows(h, in_proj, in_bias, d, d, v("shortconv_c"));
            const ir::ValueId input =
                b.linear_rows(h, in_proj, in_bias, 2 * d, d, v("shortconv_x"));
            const ir::ValueId bx = b.mul(gate_b, input, v("shortconv_bx"));
            conv.layer = n_conv++;
            const ir::ValueId conv_out =
                b.causal_conv(bx, pos, w("conv.conv.weight"),
                              spec.conv_bias ? w("conv.conv.bias") : "", conv, v("shortconv_conv"));
            const ir::ValueId y = b.mul(gate_c, conv_out, v("shortconv_y"));
            mixed = b.linear(y, w("conv.out_proj.weight"),
                             spec.conv_bias ? w("conv.out_proj.bias") : "", v("shortconv_out"));
        } else {
            ir::ValueId q = b.linear(h, w("self_attn.q_proj.weight"), "", v("attn_q"));
            ir::ValueId k = b.linear(h, w("self_attn.k_proj.weight"), "", v("attn_k"));
            const ir::ValueId vv = b.linear(h, w("self_attn.v_proj.weight"), "", v("attn_v"));
            q = b.rms_norm(q, w("self_attn.q_layernorm.weight"), eps, v("attn_q_norm"));
            k = b.rms_norm(k, w("self_attn.k_layernorm.weight"), eps, v("attn_k_norm"));
            q = b.rope(q, pos, 0, spec.n_head, spec.head_dim, v("attn_q_rope"));
            k = b.rope(k, pos, 0, spec.n_head_kv, spec.head_dim, v("attn_k_rope"));
            attn.layer = n_attention++;
            const ir::ValueId a = b.attention(q, k, vv, pos, attn, v("attn"));
            mixed = b.linear(a, w("self_attn.out_proj.weight"), "", v("attn_out"));
        }
        x = b.add(x, mixed, v("ffn_inp"));

        const ir::ValueId n = b.rms_norm(x, w("ffn_norm.weight"), eps, v("ffn_norm"));
        const ir::ValueId gate = b.linear(n, w("feed_forward.w1.weight"), "", v("ffn_gate"));
        const ir::ValueId up = b.linear(n, w("feed_forward.w3.weight"), "", v("ffn_up"));
        const ir::ValueId act = b.silu_mul(gate, up, v("ffn_act"));
        x = b.add(x, b.linear(act, w("feed_forward.w2.weight"), "", v("ffn_out")), v("l_out"));
    }

    b.output(lm_head(b, spec, shape, x, "model.embedding_norm.weight"));
}

}  // namespace anelm
