// A streamed Responses reply as OpenAI's server-sent events, each with its
// sequence_number: response.created and response.in_progress; per output item
// response.output_item.added, its content part (content_part.added), deltas
// (reasoning_text.delta, output_text.delta, function_call_arguments.delta),
// their .done events and response.output_item.done; then response.completed
// (response.incomplete when cut at max_output_tokens) with the whole response.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/engine.h"
#include "server/reply_parser.h"
#include "server/responses_api.h"

namespace anelm::server {

class ResponseStream {
public:
    explicit ResponseStream(ResponseMeta meta) : meta_(std::move(meta)) {}

    // response.created and response.in_progress.
    std::string start();
    // The events of what a split adds: an item of another kind closes the open one.
    // call_ids: one per call so far.
    std::string add(const ReplyDelta& delta, const std::vector<std::string>& call_ids);
    // Closes the open item; response.completed or response.incomplete.
    std::string finish(const std::string& finish_reason, const JobUsage& usage);
    // An error event: generation failed.
    std::string error(const ApiError& error);

private:
    enum class Item { none, reasoning, message, function_call };
    std::string event(const char* type, nlohmann::json data);
    std::string open(Item kind, nlohmann::json item);
    std::string close(const std::string& status);
    std::string delta(const std::string& piece);

    ResponseMeta meta_;
    nlohmann::json output_ = nlohmann::json::array();  // the items closed
    Item open_ = Item::none;
    nlohmann::json item_;  // the open one, its text or arguments in text_
    std::string text_;
    int sequence_ = 0;
};

}  // namespace anelm::server
