// Embedding routes: OpenAI's POST /v1/embeddings and Ollama's POST /api/embed,
// over the engine's embeddings (pooled final-norm hidden states, unit length).
#pragma once

#include <nlohmann/json.hpp>

#include "server/api_server.h"

namespace anelm::server {

// OpenAI's: input as a string, strings, token ids or arrays of them;
// encoding_format float or base64 (little-endian f32); dimensions at most the
// model's, the vector then cut to that many and scaled back to unit length
// (Matryoshka). Throws ApiError (400) naming the field.
nlohmann::json openai_embeddings(const ServedModel& model, const nlohmann::ordered_json& body);

// Ollama's: input as a string or strings; truncate (default true) cuts an
// input to the context instead of refusing it.
nlohmann::json ollama_embed(const ServedModel& model, const nlohmann::ordered_json& body);

}  // namespace anelm::server
