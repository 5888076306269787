// The weight tensors a ModelSpec calls for, with Hugging Face names and shapes.
#pragma once

#include <string>
#include <vector>

#include "io/model_spec.h"
#include "io/weight_store.h"

namespace anelm {

struct ExpectedTensor {
    std::string name;
    std::vector<int64_t> shape;
};

// Embedding, per-layer attention (with biases and q/k norms as the spec says),
// MLP and norms, final norm, and lm_head unless the embeddings are tied.
std::vector<ExpectedTensor> expected_tensors(const ModelSpec& spec);

// Throws an Error for the first expected tensor that is missing, has another
// shape ("ORIGIN: tensor NAME has shape [..], expected [..]") or is not a float
// type (matrices may be a GGUF's blocks). Tensors the spec does not call for
// are left alone.
void check_tensors(const ModelSpec& spec, const WeightStore& store);

}  // namespace anelm
