// Embedding routes: OpenAI's POST /v1/embeddings and Ollama's POST /api/embed,
// over the engine's embeddings (pooled final-norm hidden states, unit length).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "server/api_server.h"

namespace anelm::server {

// What an embedding request asks for: texts, or inputs as token ids (OpenAI only).
struct EmbeddingRequest {
    std::vector<std::string> texts;
    std::vector<std::vector<int32_t>> ids;
    bool base64 = false;     // encoding_format base64
    int64_t dimensions = 0;  // 0: the model's
    bool truncate = true;    // Ollama's: cut inputs to the context
};

// The bodies of /v1/embeddings and /api/embed, token ids below n_vocab and
// dimensions at most dims; throws ApiError (400) naming the field.
EmbeddingRequest parse_embedding_request(const nlohmann::ordered_json& body, int64_t n_vocab,
                                         int64_t dims);
EmbeddingRequest parse_ollama_embed_request(const nlohmann::ordered_json& body);

// OpenAI's: input as a string, strings, token ids or arrays of them;
// encoding_format float or base64 (little-endian f32); dimensions at most the
// model's, the vector then cut to that many and scaled back to unit length
// (Matryoshka). Throws ApiError (400) naming the field.
nlohmann::json openai_embeddings(const ServedModel& model, const nlohmann::ordered_json& body);

// Ollama's: input as a string or strings; truncate (default true) cuts an
// input to the context instead of refusing it.
nlohmann::json ollama_embed(const ServedModel& model, const nlohmann::ordered_json& body);

}  // namespace anelm::server
