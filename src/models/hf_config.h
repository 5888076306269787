// Hugging Face config.json and generation_config.json -> ModelSpec, for the
// model types of the families in models/model_families.cpp, with the
// architectures list as a fallback.
#pragma once

#include <string>
#include <string_view>

#include "io/model_spec.h"

namespace anelm {

// Parses config.json text as its family reads it; `path` names it in errors
// ("PATH: field NAME: ...").
ModelSpec parse_hf_config(std::string_view text, const std::string& path);
ModelSpec load_hf_config(const std::string& path);

// generation_config.json: its bos_token_id replaces the spec's; its
// eos_token_id (an integer or a list) comes first in eos_token_ids, followed by
// the config's own ids that it does not repeat.
void merge_generation_config(std::string_view text, const std::string& path, ModelSpec& spec);
void load_generation_config(const std::string& path, ModelSpec& spec);

}  // namespace anelm
