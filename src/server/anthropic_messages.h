// Anthropic's Messages API (POST /v1/messages) over the chat machinery: a
// Messages body is translated into the chat body /v1/chat/completions reads,
// so templates, tools, forced calls and reasoning work the same, and the reply
// is written back as content blocks (thinking, text, tool_use).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/completion_request.h"
#include "server/engine.h"
#include "server/reply_parser.h"

namespace anelm::server {

// The chat completions body a Messages body asks for. Throws ApiError (400)
// naming the Messages field: a malformed tool or tool_choice, a tool_result
// without its tool_use, a missing max_tokens.
nlohmann::ordered_json messages_to_chat(const nlohmann::ordered_json& body);

// messages_to_chat, then read as a chat request.
CompletionRequest parse_messages_request(const nlohmann::ordered_json& body,
                                         const SamplerParams& defaults);

// A new tool_use block's id, toolu_...
std::string new_tool_use_id();

// end_turn, max_tokens, stop_sequence or tool_use.
std::string stop_reason(const std::string& finish_reason, const std::string& stop_sequence,
                        const ReplyParts& parts);

nlohmann::json messages_usage_json(const JobUsage& usage);

// The whole reply as a message: {id, type, role, model, content, stop_reason,
// stop_sequence, usage}; ids: one per call, toolu_...
nlohmann::json message_json(const std::string& id, const std::string& model,
                            const ReplyParts& parts, const std::vector<std::string>& ids,
                            const std::string& stop_reason, const std::string& stop_sequence,
                            const JobUsage& usage);

// Errors as Anthropic reports them: {"type": "error", "error": {type, message}},
// the type named from the HTTP status.
nlohmann::json messages_error_body(const ApiError& error);

}  // namespace anelm::server
