// A chat request's prompt through the model's template, with its tools where
// the family's format puts them, and how its reply is to be read back.
#pragma once

#include <string>

#include "chat/chat_template.h"
#include "server/completion_request.h"
#include "server/reply_parser.h"

namespace anelm::server {

struct ChatPrompt {
    std::string text;
    ReasoningTags tags;
    bool in_reasoning = false;
    const ToolFormat* format = nullptr;  // null: the reply is read for no calls
    // A forced call (tool_choice required or a function) is generated under
    // this JSON schema: {"name": const, "arguments": the tool's parameters}.
    nlohmann::ordered_json call_schema;

    ReplyParser parser(const ToolRequest& tools) const {
        return ReplyParser(tags, in_reasoning, format, tools);
    }
};

ChatPrompt chat_prompt(const ChatTemplate& chat_template, const CompletionRequest& request);

}  // namespace anelm::server
