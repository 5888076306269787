// The body of POST /v1/chat/completions and /v1/completions, read and checked
// field by field: a wrong type or range is a 400 naming the field.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/sampler.h"
#include "server/tool_request.h"

namespace anelm::server {

enum class OutputFormat { text, json_object, json_schema };

struct CompletionRequest {
    bool chat = false;
    std::string model;  // "" when not given
    // Chat: the messages with every content as a string (text parts joined),
    // and chat_template_kwargs as template variables.
    nlohmann::ordered_json messages;
    nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();
    ToolRequest tools;  // chat: tools, tool_choice, parallel_tool_calls
    // Completions: the prompt as text, or as token ids when given so.
    std::string prompt;
    std::vector<int32_t> prompt_ids;
    bool prompt_is_ids = false;

    int64_t max_tokens = -1;  // -1: until the context is full
    SamplerParams sampler;
    bool seed_given = false;  // the body named a seed
    std::vector<std::string> stop;
    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage
    bool logprobs = false;
    int top_logprobs = 0;
    OutputFormat format = OutputFormat::text;
    nlohmann::ordered_json schema;                                    // json_schema's schema
    std::string schema_param = "response_format.json_schema.schema";  // named in its errors
};

// Fields the body leaves out keep `defaults` (the server's sampler settings).
// Throws ApiError (400) naming the field.
CompletionRequest parse_completion_request(const nlohmann::ordered_json& body, bool chat,
                                           const SamplerParams& defaults);

// The field `name` of a request body, or null when it is absent.
const nlohmann::ordered_json& body_field(const nlohmann::ordered_json& body, const char* name);

// The string `v`, named `at` in the 400 it gets otherwise.
std::string string_value(const nlohmann::ordered_json& v, const std::string& at);

// The field `name` of the object `v` (named `at`), null when absent; a 400
// when `v` is no object.
const nlohmann::ordered_json& object_member(const nlohmann::ordered_json& v, const std::string& at,
                                            const char* name);

// Text sent as a string or as an array of {type, text} parts of the
// `accepted` types, joined ("" for null). Other parts (images, audio) get a
// 400: the model reads text only.
std::string joined_text(const nlohmann::ordered_json& v, const std::string& at,
                        std::initializer_list<std::string_view> accepted);

// Parses a request body as JSON; a 400 with the parser's position otherwise.
nlohmann::ordered_json parse_body(const std::string& body);

}  // namespace anelm::server
