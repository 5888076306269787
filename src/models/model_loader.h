// One entry point for every model format anelm reads.
#pragma once

#include <string>

#include "io/model_spec.h"
#include "io/weight_store.h"

namespace anelm {

struct LoadedModel {
    ModelSpec spec;
    WeightStore weights;
    std::string tokenizer_path;  // tokenizer.json in the model folder, the GGUF file, or empty
};

// `path` is a Hugging Face folder (config.json; model.safetensors or
// model.safetensors.index.json with its shards; optionally generation_config.json
// and tokenizer.json), a GGUF file (models/gguf_model.h) or a llama2.c .bin
// checkpoint, as detect_model_format tells them apart; anything else is refused
// with its message. The weights are checked against the spec: every expected
// tensor present, with the expected shape.
LoadedModel load_model(const std::string& path);

}  // namespace anelm
