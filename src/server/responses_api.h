// OpenAI's Responses API (POST /v1/responses) over the chat machinery: a
// Responses body (input items, instructions, flat function tools, text.format,
// reasoning) is translated into the chat body /v1/chat/completions reads, so
// templates, tools, forced calls and reasoning work the same, and the reply is
// written back as output items (reasoning, message, function_call). Stateless:
// nothing is stored, so previous_response_id is refused.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "server/completion_request.h"
#include "server/engine.h"
#include "server/reply_parser.h"

namespace anelm::server {

// The chat completions body a Responses body asks for. Throws ApiError (400)
// naming the Responses field: a malformed tool, tool_choice or input item, a
// function_call_output without its function_call, previous_response_id.
nlohmann::ordered_json responses_to_chat(const nlohmann::ordered_json& body);

// responses_to_chat, then read as a chat request.
CompletionRequest parse_responses_request(const nlohmann::ordered_json& body,
                                          const SamplerParams& defaults);

// What every snapshot of one response carries: its id, time, model, and the
// request's settings echoed (instructions, tools, tool_choice, ...).
struct ResponseMeta {
    std::string id;  // resp_...
    int64_t created_at = 0;
    std::string model;
    nlohmann::json echo;
};

ResponseMeta new_response_meta(const nlohmann::ordered_json& body, const std::string& model);

// completed, or incomplete when generation stopped at max_output_tokens.
std::string response_status(const std::string& finish_reason);

// Output items, each with its id (rs_..., msg_..., fc_...) and status.
nlohmann::json reasoning_item(const std::string& id, const std::string& text,
                              const std::string& status);
nlohmann::json message_item(const std::string& id, const std::string& text,
                            const std::string& status);
nlohmann::json output_text_part(const std::string& text);
nlohmann::json function_call_item(const std::string& id, const std::string& call_id,
                                  const std::string& name, const std::string& arguments,
                                  const std::string& status);

// The whole reply's items: reasoning, then the message, then one per call;
// call_ids: one per call.
nlohmann::json output_items(const ReplyParts& parts, const std::vector<std::string>& call_ids,
                            const std::string& status);

// The response object; usage null while it is in progress.
nlohmann::json response_json(const ResponseMeta& meta, const std::string& status,
                             nlohmann::json output, const JobUsage* usage);

}  // namespace anelm::server
