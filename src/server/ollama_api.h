// Ollama's API (/api/chat, /api/generate, /api/tags, /api/show, /api/ps,
// /api/version) over the chat machinery: a request body is translated into the
// chat (or completions) body /v1/chat/completions reads, so templates, tools,
// reasoning and the json_schema grammar work the same; replies are written in
// Ollama's shape by ollama_stream.h.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>

#include "runtime/sampler.h"
#include "server/api_error.h"
#include "server/model_facts.h"

namespace anelm::server {

// A chat or completions body, and what the Ollama request asked beyond it.
struct OllamaRequest {
    nlohmann::ordered_json body;
    bool chat = true;
    // /api/generate with no prompt or /api/chat with no messages: Ollama's
    // clients load the model so, and get a done line at once.
    bool load_only = false;
};

// Checks `model` (which Ollama requires): the served name, with or without the
// ":latest" tag Ollama's names carry, else a 404 as Ollama's "model not found".
void check_ollama_model(const nlohmann::ordered_json& body, const std::string& served);

// /api/chat's body as a chat body. Throws ApiError (400) naming the field.
OllamaRequest ollama_chat_request(const nlohmann::ordered_json& body);

// /api/generate's body: a chat of the system and the prompt through the
// template, or the prompt as given when `raw` is set or the model has no template.
OllamaRequest ollama_generate_request(const nlohmann::ordered_json& body, bool has_template);

// RFC 3339 in UTC with nanoseconds, as Ollama's created_at and modified_at.
std::string ollama_time(std::chrono::system_clock::time_point t);

// One entry of /api/tags: {name, model, modified_at, size, digest, details}.
nlohmann::json ollama_model_json(const std::string& name, const ModelFacts& facts);

// /api/show: modelfile, parameters, template (the Jinja source), details,
// model_info, capabilities (completion; tools and thinking with a template
// that has them).
nlohmann::json ollama_show_json(const std::string& name, const ModelFacts& facts,
                                const std::string& template_source, int64_t n_ctx,
                                const SamplerParams& defaults);

}  // namespace anelm::server
