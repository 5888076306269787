#include "models/expected_tensors.h"

#include <fmt/format.h>

#include "base/error.h"
#include "models/model_family.h"

namespace anelm {

void add_attention(std::vector<ExpectedTensor>& out, const std::string& p, const ModelSpec& spec,
                   int64_t q_rows, const char* out_proj) {
    const int64_t d = spec.n_embd, q_dim = spec.n_head * spec.head_dim;
    const int64_t kv_dim = spec.n_head_kv * spec.head_dim;
    out.push_back({p + "self_attn.q_proj.weight", {q_rows, d}});
    out.push_back({p + "self_attn.k_proj.weight", {kv_dim, d}});
    out.push_back({p + "self_attn.v_proj.weight", {kv_dim, d}});
    out.push_back({p + "self_attn." + out_proj + ".weight", {d, q_dim}});
}

void add_qk_norms(std::vector<ExpectedTensor>& out, const std::string& p, const ModelSpec& spec,
                  const char* q_norm, const char* k_norm) {
    out.push_back({p + "self_attn." + q_norm + ".weight", {spec.head_dim}});
    out.push_back({p + "self_attn." + k_norm + ".weight", {spec.head_dim}});
}

void add_mlp(std::vector<ExpectedTensor>& out, const std::string& p, const ModelSpec& spec,
             const char* gate, const char* up, const char* down) {
    const int64_t d = spec.n_embd, ff = spec.n_ff;
    out.push_back({p + gate + ".weight", {ff, d}});
    out.push_back({p + up + ".weight", {ff, d}});
    out.push_back({p + down + ".weight", {d, ff}});
}

void add_output(std::vector<ExpectedTensor>& out, const ModelSpec& spec, const char* norm) {
    out.push_back({norm, {spec.n_embd}});
    if (!spec.tie_word_embeddings) out.push_back({"lm_head.weight", {spec.n_vocab, spec.n_embd}});
}

std::vector<ExpectedTensor> decoder_tensors(const ModelSpec& spec, bool mlp_norms) {
    const int64_t d = spec.n_embd;
    const int64_t q_dim = spec.n_head * spec.head_dim, kv_dim = spec.n_head_kv * spec.head_dim;
    std::vector<ExpectedTensor> out = {{"model.embed_tokens.weight", {spec.n_vocab, d}}};
    for (int64_t i = 0; i < spec.n_layer; ++i) {
        const std::string p = fmt::format("model.layers.{}.", i);
        out.push_back({p + "input_layernorm.weight", {d}});
        add_attention(out, p, spec, q_dim, "o_proj");
        if (spec.attention_bias) {
            out.push_back({p + "self_attn.q_proj.bias", {q_dim}});
            out.push_back({p + "self_attn.k_proj.bias", {kv_dim}});
            out.push_back({p + "self_attn.v_proj.bias", {kv_dim}});
        }
        if (spec.attention_out_bias) out.push_back({p + "self_attn.o_proj.bias", {d}});
        if (spec.qk_norm) add_qk_norms(out, p, spec, "q_norm", "k_norm");
        out.push_back({p + "post_attention_layernorm.weight", {d}});
        if (mlp_norms) {
            out.push_back({p + "pre_feedforward_layernorm.weight", {d}});
            out.push_back({p + "post_feedforward_layernorm.weight", {d}});
        }
        add_mlp(out, p, spec, "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj");
    }
    add_output(out, spec, "model.norm.weight");
    return out;
}

std::vector<ExpectedTensor> expected_tensors(const ModelSpec& spec) {
    return model_family(spec.arch)->expected_tensors(spec);
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
