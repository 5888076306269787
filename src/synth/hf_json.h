// The JSON files of a Hugging Face model folder, as transformers and tokenizers
// write them for the preset's architecture.
#pragma once

#include <string>

#include "base/dtype.h"
#include "synth/synth.h"

namespace anelm::synth {

std::string config_json(const SynthPreset& preset, DType dtype);
std::string generation_config_json(const SynthPreset& preset);
std::string tokenizer_json(const SynthPreset& preset);
std::string tokenizer_config_json(const SynthPreset& preset);

// Throws Error when the preset cannot be written: a vocabulary too small for the
// bytes and the family's tokens, or heads that do not fit the sizes.
void check_preset(const SynthPreset& preset);

}  // namespace anelm::synth
