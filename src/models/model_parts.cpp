#include <cmath>

#include "base/half.h"
#include "ir/builder.h"
#include "models/families.h"

namespace anelm {

ir::Function& add_function(ir::Program& program, const FunctionShape& shape) {
    ir::Function& fn = program.functions.emplace_back();
    fn.name = shape.name;
    fn.n_tokens = shape.n_tokens;
    return fn;
}

ir::Attrs attention_attrs(const ModelSpec& spec, int64_t head_dim) {
    ir::Attrs attn;
    attn.n_head = spec.n_head;
    attn.n_head_kv = spec.n_head_kv;
    attn.head_dim = head_dim;
    attn.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    attn.state = 0;
    return attn;
}

ir::ValueId lm_head(ir::Builder& b, const ModelSpec& spec, const FunctionShape& shape,
                    ir::ValueId x, const char* norm, float gain_offset, std::string name) {
    if (!shape.all_logits) x = b.last_row(x, "last_token");
    x = b.rms_norm(x, norm, static_cast<float>(spec.rms_norm_eps), "output_norm", gain_offset);
    const char* head = spec.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
    return b.linear(x, head, "", std::move(name));
}

float scale_as_stored(double factor, DType table) {
    const auto f = static_cast<float>(factor);
    switch (table) {
        case DType::bf16:
            return bf16_to_f32(f32_to_bf16(f));
        case DType::f16:
            return round_to_f16(f);
        default:
            return f;
    }
}

ir::ValueId scaled_embedding(ir::Builder& b, const ModelSpec& spec, const WeightStore& weights,
                             ir::ValueId ids) {
    const char* table = "model.embed_tokens.weight";
    const ir::ValueId x = b.embed(ids, table, "token_embd");
    return b.scale(
        x, scale_as_stored(std::sqrt(static_cast<double>(spec.n_embd)), weights.get(table).dtype),
        "token_embd_scaled");
}

int32_t sliding_rope(const ModelSpec& spec, ir::Program& program) {
    if (program.ropes.size() < 2) {
        ModelSpec local = spec;
        local.rope_theta = spec.rope_local_base_freq;
        local.rope_scaling = {};
        local.global_head_dim = 0;
        local.rope_global_fraction = 1.0;
        program.ropes.push_back({rope_inv_freq(local), spec.rope_style == RopeStyle::interleaved});
    }
    return 1;
}

}  // namespace anelm
