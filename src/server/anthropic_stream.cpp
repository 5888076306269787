#include "server/anthropic_stream.h"

#include "server/anthropic_messages.h"
#include "server/openai_json.h"

namespace anelm::server {

namespace {

using json = nlohmann::json;

std::string block_delta(int index, json delta) {
    return message_event(
        {{"type", "content_block_delta"}, {"index", index}, {"delta", std::move(delta)}});
}

}  // namespace

std::string message_event(const json& data) {
    return "event: " + data.at("type").get<std::string>() + "\ndata: " + json_text(data) + "\n\n";
}

std::string MessageStream::start(const JobUsage& usage) const {
    JobUsage prompt = usage;
    prompt.completion_tokens = 0;
    return message_event({{"type", "message_start"},
                          {"message",
                           {{"id", id_},
                            {"type", "message"},
                            {"role", "assistant"},
                            {"model", model_},
                            {"content", json::array()},
                            {"stop_reason", nullptr},
                            {"stop_sequence", nullptr},
                            {"usage", messages_usage_json(prompt)}}}});
}

std::string MessageStream::close() {
    if (open_ == Block::none) return "";
    open_ = Block::none;
    return message_event({{"type", "content_block_stop"}, {"index", index_}});
}

std::string MessageStream::open(Block kind, json block) {
    std::string out = close();
    open_ = kind;
    ++index_;
    return out + message_event({{"type", "content_block_start"},
                                {"index", index_},
                                {"content_block", std::move(block)}});
}

std::string MessageStream::add(const ReplyDelta& delta, const std::vector<std::string>& ids) {
    std::string out;
    if (!delta.reasoning.empty()) {
        if (open_ != Block::thinking)
            out +=
                open(Block::thinking, {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
        out += block_delta(index_, {{"type", "thinking_delta"}, {"thinking", delta.reasoning}});
    }
    if (!delta.content.empty()) {
        if (open_ != Block::text) out += open(Block::text, {{"type", "text"}, {"text", ""}});
        out += block_delta(index_, {{"type", "text_delta"}, {"text", delta.content}});
    }
    for (const CallDelta& c : delta.calls) {
        // Calls are read one after another, so a call's later pieces come
        // while its block is the open one.
        if (c.first)
            out += open(Block::tool_use, {{"type", "tool_use"},
                                          {"id", ids.at(c.index)},
                                          {"name", c.name},
                                          {"input", json::object()}});
        if (!c.arguments.empty())
            out +=
                block_delta(index_, {{"type", "input_json_delta"}, {"partial_json", c.arguments}});
    }
    return out;
}

std::string MessageStream::finish(const std::string& stop_reason, const std::string& stop_sequence,
                                  const JobUsage& usage) {
    std::string out = close();
    out +=
        message_event({{"type", "message_delta"},
                       {"delta",
                        {{"stop_reason", stop_reason},
                         {"stop_sequence", stop_sequence.empty() ? json() : json(stop_sequence)}}},
                       {"usage", {{"output_tokens", usage.completion_tokens}}}});
    return out + message_event({{"type", "message_stop"}});
}

}  // namespace anelm::server
