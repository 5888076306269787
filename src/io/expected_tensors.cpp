#include "io/expected_tensors.h"

#include <fmt/format.h>

#include "base/error.h"

namespace anelm {

namespace {

// LFM2: attention layers (Q/K norms, out_proj) or short-convolution blocks,
// each followed by a SwiGLU feed-forward (w1 gate, w3 up, w2 down); the final
// norm is named embedding_norm.
std::vector<ExpectedTensor> lfm2_tensors(const ModelSpec& spec) {
    const int64_t d = spec.n_embd, ff = spec.n_ff;
    const int64_t q_dim = spec.n_head * spec.head_dim, kv_dim = spec.n_head_kv * spec.head_dim;
    std::vector<ExpectedTensor> out = {{"model.embed_tokens.weight", {spec.n_vocab, d}}};
    for (int64_t i = 0; i < spec.n_layer; ++i) {
        const std::string p = fmt::format("model.layers.{}.", i);
        out.push_back({p + "operator_norm.weight", {d}});
        if (spec.conv_layers.at(static_cast<size_t>(i))) {
            out.push_back({p + "conv.in_proj.weight", {3 * d, d}});
            out.push_back({p + "conv.conv.weight", {d, 1, spec.conv_kernel}});
            out.push_back({p + "conv.out_proj.weight", {d, d}});
            if (spec.conv_bias) {
                out.push_back({p + "conv.in_proj.bias", {3 * d}});
                out.push_back({p + "conv.conv.bias", {d}});
                out.push_back({p + "conv.out_proj.bias", {d}});
            }
        } else {
            out.push_back({p + "self_attn.q_proj.weight", {q_dim, d}});
            out.push_back({p + "self_attn.k_proj.weight", {kv_dim, d}});
            out.push_back({p + "self_attn.v_proj.weight", {kv_dim, d}});
            out.push_back({p + "self_attn.out_proj.weight", {d, q_dim}});
            out.push_back({p + "self_attn.q_layernorm.weight", {spec.head_dim}});
            out.push_back({p + "self_attn.k_layernorm.weight", {spec.head_dim}});
        }
        out.push_back({p + "ffn_norm.weight", {d}});
        out.push_back({p + "feed_forward.w1.weight", {ff, d}});
        out.push_back({p + "feed_forward.w3.weight", {ff, d}});
        out.push_back({p + "feed_forward.w2.weight", {d, ff}});
    }
    out.push_back({"model.embedding_norm.weight", {d}});
    if (!spec.tie_word_embeddings) out.push_back({"lm_head.weight", {spec.n_vocab, d}});
    return out;
}

}  // namespace

std::vector<ExpectedTensor> expected_tensors(const ModelSpec& spec) {
    if (spec.arch == Arch::lfm2) return lfm2_tensors(spec);
    const int64_t d = spec.n_embd, ff = spec.n_ff;
    const int64_t q_dim = spec.n_head * spec.head_dim, kv_dim = spec.n_head_kv * spec.head_dim;
    std::vector<ExpectedTensor> out = {{"model.embed_tokens.weight", {spec.n_vocab, d}}};
    for (int64_t i = 0; i < spec.n_layer; ++i) {
        const std::string p = fmt::format("model.layers.{}.", i);
        out.push_back({p + "input_layernorm.weight", {d}});
        out.push_back({p + "self_attn.q_proj.weight", {q_dim, d}});
        out.push_back({p + "self_attn.k_proj.weight", {kv_dim, d}});
        out.push_back({p + "self_attn.v_proj.weight", {kv_dim, d}});
        out.push_back({p + "self_attn.o_proj.weight", {d, q_dim}});
        if (spec.attention_bias) {
            out.push_back({p + "self_attn.q_proj.bias", {q_dim}});
            out.push_back({p + "self_attn.k_proj.bias", {kv_dim}});
            out.push_back({p + "self_attn.v_proj.bias", {kv_dim}});
        }
        if (spec.attention_out_bias) out.push_back({p + "self_attn.o_proj.bias", {d}});
        if (spec.qk_norm) {
            out.push_back({p + "self_attn.q_norm.weight", {spec.head_dim}});
            out.push_back({p + "self_attn.k_norm.weight", {spec.head_dim}});
        }
        out.push_back({p + "post_attention_layernorm.weight", {d}});
        if (spec.arch == Arch::gemma3) {  // norms around the MLP as well
            out.push_back({p + "pre_feedforward_layernorm.weight", {d}});
            out.push_back({p + "post_feedforward_layernorm.weight", {d}});
        }
        out.push_back({p + "mlp.gate_proj.weight", {ff, d}});
        out.push_back({p + "mlp.up_proj.weight", {ff, d}});
        out.push_back({p + "mlp.down_proj.weight", {d, ff}});
    }
    out.push_back({"model.norm.weight", {d}});
    if (!spec.tie_word_embeddings) out.push_back({"lm_head.weight", {spec.n_vocab, d}});
    return out;
}

void check_tensors(const ModelSpec& spec, const WeightStore& store) {
    for (const ExpectedTensor& t : expected_tensors(spec)) {
        const TensorView& view = store.get(t.name, t.shape);
        if (view.dtype != DType::f32 && view.dtype != DType::f16 && view.dtype != DType::bf16 &&
            !(view.dtype == DType::blocks && t.shape.size() == 2))
            fail("{}: tensor {} has dtype {}, expected f32, f16 or bf16", store.origin(), t.name,
                 dtype_name(view.dtype));
    }
}

}  // namespace anelm
