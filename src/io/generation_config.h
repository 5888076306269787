// The sampling a model's generation_config.json recommends, as transformers
// reads it: each field only where the file gives it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace anelm {

struct GenerationSampling {
    std::optional<bool> do_sample;
    std::optional<double> temperature, top_p, min_p, repetition_penalty;
    std::optional<int64_t> top_k;

    bool empty() const {
        return !do_sample && !temperature && !top_p && !min_p && !repetition_penalty && !top_k;
    }
};

// Throws Error naming the file and field for a value of the wrong type.
GenerationSampling read_generation_sampling(const std::string& path);

// The model's recommendation: MODEL_DIR/generation_config.json when it exists
// (nothing for a GGUF or llama2.c file, or a folder without one).
GenerationSampling model_generation_sampling(const std::string& model_path);

}  // namespace anelm
