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

// The tensors of the spec's family.
std::vector<ExpectedTensor> expected_tensors(const ModelSpec& spec);

// A Llama-like decoder's: embedding, per-layer attention (with biases and q/k
// norms as the spec says), norms and MLP, final norm, and lm_head unless the
// embeddings are tied. `mlp_norms`: norms before and after the MLP as well
// (Gemma 3).
std::vector<ExpectedTensor> decoder_tensors(const ModelSpec& spec, bool mlp_norms);

// The parts families share, appended to `out` under the layer's prefix `p`
// ("model.layers.3."): q, k and v of a layer whose queries take q_rows rows
// and the output projection; the per-head q and k norms under the family's
// names; the SwiGLU feed-forward (gate, up, down); the final norm, and the LM
// head unless the embedding is tied.
void add_attention(std::vector<ExpectedTensor>& out, const std::string& p, const ModelSpec& spec,
                   int64_t q_rows, const char* out_proj);
void add_qk_norms(std::vector<ExpectedTensor>& out, const std::string& p, const ModelSpec& spec,
                  const char* q_norm, const char* k_norm);
void add_mlp(std::vector<ExpectedTensor>& out, const std::string& p, const ModelSpec& spec,
             const char* gate, const char* up, const char* down);
void add_output(std::vector<ExpectedTensor>& out, const ModelSpec& spec, const char* norm);

// Throws an Error for the first expected tensor that is missing, has another
// shape ("ORIGIN: tensor NAME has shape [..], expected [..]") or is not a float
// type (matrices may be a GGUF's blocks). Tensors the spec does not call for
// are left alone.
void check_tensors(const ModelSpec& spec, const WeightStore& store);

}  // namespace anelm
