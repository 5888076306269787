// A streamed Messages reply as Anthropic's server-sent events: message_start,
// then per content block content_block_start, its deltas (thinking_delta,
// text_delta, input_json_delta) and content_block_stop, then message_delta
// (stop_reason, usage) and message_stop.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "server/engine.h"
#include "server/reply_parser.h"

namespace anelm::server {

class MessageStream {
public:
    MessageStream(std::string id, std::string model)
        : id_(std::move(id)), model_(std::move(model)) {}

    // message_start, with the prompt's usage.
    std::string start(const JobUsage& usage) const;
    // The events of what a split adds: a block of another kind closes the open one.
    // ids: the tool_use ids, one per call so far.
    std::string add(const ReplyDelta& delta, const std::vector<std::string>& ids);
    // Closes the open block; message_delta and message_stop.
    std::string finish(const std::string& stop_reason, const std::string& stop_sequence,
                       const JobUsage& usage);

private:
    enum class Block { none, thinking, text, tool_use };
    std::string open(Block kind, nlohmann::json block);
    std::string close();

    std::string id_, model_;
    Block open_ = Block::none;
    int index_ = -1;  // of the open (or last) block
};

// "event: <type>\ndata: <json>\n\n", as Anthropic frames its events.
std::string message_event(const nlohmann::json& data);

}  // namespace anelm::server
