// A model ready to run: its weights, hyperparameters and tokenizer.
#pragma once

#include <memory>
#include <string>

#include "models/model_loader.h"
#include "tokenizer/tokenizer.h"

namespace anelm {

struct Model {
    std::string path;  // as given to open_model
    LoadedModel loaded;
    std::unique_ptr<Tokenizer> tokenizer;  // null when none was found or asked for

    const ModelSpec& spec() const { return loaded.spec; }
    const WeightStore& weights() const { return loaded.weights; }
    // The ids that end generation: generation_config's, else the tokenizer's.
    std::vector<int32_t> stop_ids() const;
};

// Refuses a tokenizer with ids the model has no embedding rows for. Fewer ids
// are fine: vocabularies are often padded.
void check_tokenizer_fits(const Tokenizer& tokenizer, const std::string& tokenizer_path,
                          int64_t n_vocab, const std::string& model_path);

// tokenizer_path overrides the tokenizer found beside the model; a llama2.c
// checkpoint has none of its own. Either must fit the model (check_tokenizer_fits).
Model open_model(const std::string& path, const std::string& tokenizer_path, bool need_tokenizer);

}  // namespace anelm
