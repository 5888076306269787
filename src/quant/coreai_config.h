// Apple's coreai-opt compression config for `coreai.llm.export
// --compression-config`, written from a quantization recipe, so a model
// exported by Core AI gets the widths anelm chose per matrix.
//
// iOS (the Neural Engine path) reads `kmeans_palettization_config`: LUTs of
// n_bits per group of output rows, as anelm's. Its export names a layer's
// modules `extend.model.layers.N.<block>.<proj>` (block self_attn or mlp)
// and the untied head `extend.lm_head`; embeddings are its own int8 table.
// macOS reads `quantization_config`: int4 (per block of 32 inputs) or int8
// (per channel) weights; its export fuses q/k/v into one module, so a width
// is set per layer, the widest of the layer's matrices.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "quant/quant_spec.h"

namespace anelm::quant {

enum class CoreAiPlatform : uint8_t { ios, macos };

// "ios" or "macos"; throws Error naming `what` otherwise.
CoreAiPlatform parse_coreai_platform(std::string_view text, std::string_view what);

// One linear weight of a recipe: its Hugging Face tensor name
// (model.layers.N.self_attn.q_proj.weight, lm_head.weight) and its choice.
struct RecipeWeight {
    std::string name;
    QuantChoice choice;
    int64_t numel = 0;
};

// The YAML text: `header` lines become comments at the top; the commonest
// choice of the layers' weights (by weights) is global_config and the others
// are module_name_configs regexes grouping the layers that share a choice.
// Weights that are neither a layer's nor lm_head.weight are left out (a tied
// head is the export's embedding table).
std::string coreai_compression_yaml(const std::vector<RecipeWeight>& weights,
                                    CoreAiPlatform platform,
                                    const std::vector<std::string>& header);

}  // namespace anelm::quant
