// The JSON of OpenAI's responses: whole completions, stream chunks, usage and
// log-probabilities, for chat (chat.completion) and text (text_completion).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "server/engine.h"
#include "server/reply_parser.h"
#include "tokenizer/tokenizer.h"

namespace anelm::server {

struct ResponseHead {
    bool chat = false;
    std::string id;  // chatcmpl-... or cmpl-...
    int64_t created = 0;
    std::string model;
};

// 16 hex digits, unique to this process, for the ids of responses and calls.
std::string random_id();

ResponseHead new_response_head(bool chat, const std::string& model);

nlohmann::json usage_json(const JobUsage& usage);

// Chat: {"content": [{token, logprob, bytes, top_logprobs}]}; text completions:
// {tokens, token_logprobs, top_logprobs, text_offset}, offsets counted from text_offset0.
nlohmann::json logprobs_json(const ResponseHead& head, const Tokenizer& tokenizer,
                             const std::vector<TokenLogprob>& logprobs, size_t text_offset0);

// A whole (non-streamed) response.
nlohmann::json completion_json(const ResponseHead& head, const std::string& text,
                               const std::string& finish_reason, const JobUsage& usage,
                               const nlohmann::json& logprobs);
// A whole chat response with its message as chat_message_json writes it.
nlohmann::json completion_json(const ResponseHead& head, nlohmann::json message,
                               const std::string& finish_reason, const JobUsage& usage,
                               const nlohmann::json& logprobs);

// A new tool call's id, call_...
std::string new_call_id();

// A chat reply's message: content (null when there is none beside calls),
// reasoning_content when there is some, tool_calls with their ids.
nlohmann::json chat_message_json(const ReplyParts& parts, const std::vector<std::string>& ids);

// A chat stream chunk's delta: new content, reasoning and call pieces (a call's
// first piece carries its id, type and name).
nlohmann::json chat_delta_json(const ReplyDelta& delta, const std::vector<std::string>& ids);

// One stream chunk of a chat with this delta.
nlohmann::json chunk_json(const ResponseHead& head, nlohmann::json delta,
                          const std::string& finish_reason, const nlohmann::json& logprobs);

// One stream chunk with a text delta (or the assistant role, for chat's first),
// a finish reason ("" for none) and logprobs (null for none).
nlohmann::json chunk_json(const ResponseHead& head, const std::string* text, bool role,
                          const std::string& finish_reason, const nlohmann::json& logprobs);

// The last chunk when usage was asked for: no choices, the usage.
nlohmann::json usage_chunk_json(const ResponseHead& head, const JobUsage& usage);

// Serialized, with invalid UTF-8 (a token that is part of a character) replaced.
std::string json_text(const nlohmann::json& value);

// "data: <json>\n\n", as Server-Sent Events frame a message.
std::string sse_event(const nlohmann::json& data);

}  // namespace anelm::server
