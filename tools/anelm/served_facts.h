// What `anelm serve` tells Ollama's clients about the model it loaded.
#pragma once

#include <string>

#include "converted/ane_pipeline.h"
#include "runtime/model.h"
#include "server/model_facts.h"

namespace anelm::cli {

// model: the loaded model, or null for a converted folder (then converted).
server::ModelFacts served_facts(const std::string& path, const Model* model,
                                const ConvertedModel* converted);

}  // namespace anelm::cli
