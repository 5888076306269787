// A chat reply split as OpenAI's API returns it: the text inside the
// template's think block (reasoning_content), the text for the user (content)
// and the tool calls, read from the text generated so far. Each split extends
// the one before (held-back text is text that may still turn out to begin a
// think tag or a call), so a stream sends the differences.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/tool_format.h"

namespace anelm::server {

// The tags around a template's reasoning; empty when it has none.
struct ReasoningTags {
    std::string open, close;
    bool active() const { return !open.empty(); }
};

// <think>...</think> (Qwen3, Qwen3.5, LFM2.5), Gemma 4's <|channel>thought...<channel|>.
ReasoningTags reasoning_tags_for(std::string_view template_source);

// Whether the prompt ends inside an open think block (Qwen3.5's prompt opens it).
bool opens_reasoning(const ReasoningTags& tags, std::string_view prompt);

struct ReplyParts {
    std::string reasoning, content;
    std::vector<ToolCall> calls;
};

class ReplyParser {
public:
    // format null: no tools, the text after any think block is all content.
    ReplyParser(ReasoningTags tags, bool in_reasoning, const ToolFormat* format,
                const ToolRequest& tools)
        : tags_(std::move(tags)), in_reasoning_(in_reasoning), format_(format), tools_(tools) {}
    void push(std::string_view text) { text_ += text; }
    // What may be shown so far; final: the whole reply.
    ReplyParts parts(bool final) const;

private:
    ReasoningTags tags_;
    bool in_reasoning_;
    const ToolFormat* format_;
    ToolRequest tools_;
    std::string text_;
};

struct CallDelta {
    size_t index = 0;
    bool first = false;  // carries the id and name
    std::string name, arguments;
};

struct ReplyDelta {
    std::string reasoning, content;
    std::vector<CallDelta> calls;
    bool empty() const { return reasoning.empty() && content.empty() && calls.empty(); }
};

// What each split adds to those before it.
class ReplyDeltas {
public:
    ReplyDelta next(const ReplyParts& parts);

private:
    ReplyParts sent_;
};

}  // namespace anelm::server
