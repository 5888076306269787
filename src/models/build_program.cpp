#include <algorithm>

#include "base/error.h"
#include "models/model_family.h"

namespace anelm {

ir::Program build_program(const ModelSpec& spec, const WeightStore& weights,
                          const ProgramOptions& options) {
    const int64_t n_ctx = options.n_ctx > 0 ? options.n_ctx : spec.n_ctx_train;
    if (n_ctx <= 0) fail("{}: no context length (set --ctx)", spec.source);

    ir::Program program;
    // Caches for the layers that need them: KV for attention, the inputs of
    // the short convolutions (LFM2) and of the DeltaNet convolutions with the
    // DeltaNet states (Qwen3.5).
    const auto n_conv =
        static_cast<int64_t>(std::count(spec.conv_layers.begin(), spec.conv_layers.end(), true));
    const auto n_delta =
        static_cast<int64_t>(std::count(spec.delta_layers.begin(), spec.delta_layers.end(), true));
    const ModelFamily& family = *model_family(spec.arch);
    if (family.add_caches)
        family.add_caches(spec, n_ctx, program);
    else
        program.states.push_back(
            {"model_model_kv_cache_0",
             DType::f16,
             {2 * (spec.n_layer - n_conv - n_delta), spec.n_head_kv, n_ctx, spec.head_dim}});
    if (n_conv > 0)
        program.states.push_back(
            {"model_model_conv_cache_0", DType::f16, {n_conv, 1, n_ctx, spec.n_embd}});
    if (n_delta > 0) {
        const int64_t conv_dim = 2 * spec.delta_n_head_k * spec.delta_head_dim_k +
                                 spec.delta_n_head_v * spec.delta_head_dim_v;
        program.states.push_back(
            {"model_model_conv_cache_0", DType::f16, {n_delta, 1, n_ctx, conv_dim}});
        // The state after each of the last positions a verify pass may roll
        // back over (decode: one); a prefill keeps only its last.
        int64_t slots = 2;
        for (const FunctionShape& f : options.functions)
            if (f.name != "prefill") slots = std::max(slots, f.n_tokens + 1);
        program.states.push_back(
            {"model_model_delta_state_0",
             DType::f32,
             {n_delta, 1, slots,
              spec.delta_n_head_v * spec.delta_head_dim_k * spec.delta_head_dim_v}});
    }
    program.ropes.push_back({rope_inv_freq(spec), spec.rope_style == RopeStyle::interleaved});

    for (const FunctionShape& shape : options.functions)
        family.build_function(spec, weights, shape, program);
    ir::verify(program);
    return program;
}

}  // namespace anelm
