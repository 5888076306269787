#include "ir/builder.h"
#include "models/families.h"

namespace anelm {

ir::Function& add_function(ir::Program& program, const FunctionShape& shape) {
    ir::Function& fn = program.functions.emplace_back();
    fn.name = shape.name;
    fn.n_tokens = shape.n_tokens;
    return fn;
}

ir::ValueId lm_head(ir::Builder& b, const ModelSpec& spec, const FunctionShape& shape,
                    ir::ValueId x, const char* norm, float gain_offset, std::string name) {
    if (!shape.all_logits) x = b.last_row(x, "last_token");
    x = b.rms_norm(x, norm, static_cast<float>(spec.rms_norm_eps), "output_norm", gain_offset);
    const char* head = spec.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
    return b.linear(x, head, "", std::move(name));
}

}  // namespace anelm
