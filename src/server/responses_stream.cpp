#include "server/responses_stream.h"

#include "server/openai_json.h"

namespace anelm::server {

namespace {

using json = nlohmann::json;

const char* part_type(bool reasoning) {
    return reasoning ? "reasoning_text" : "output_text";
}

}  // namespace

std::string ResponseStream::event(const char* type, json data) {
    data["type"] = type;
    data["sequence_number"] = sequence_++;
    return fmt::format("event: {}\ndata: {}\n\n", type, json_text(data));
}

std::string ResponseStream::start() {
    const json response = response_json(meta_, "in_progress", json::array(), nullptr);
    std::string out = event("response.created", {{"response", response}});
    return out + event("response.in_progress", {{"response", response}});
}

std::string ResponseStream::open(Item kind, json item) {
    std::string out = close("completed");
    open_ = kind;
    text_.clear();
    const size_t index = output_.size();
    if (kind != Item::function_call) item["content"] = json::array();
    out += event("response.output_item.added", {{"output_index", index}, {"item", item}});
    if (kind != Item::function_call) {
        const bool reasoning = kind == Item::reasoning;
        json part =
            reasoning ? json{{"type", part_type(true)}, {"text", ""}} : output_text_part("");
        out += event("response.content_part.added", {{"item_id", item["id"]},
                                                     {"output_index", index},
                                                     {"content_index", 0},
                                                     {"part", std::move(part)}});
    }
    item_ = std::move(item);
    return out;
}

std::string ResponseStream::delta(const std::string& piece) {
    text_ += piece;
    json data = {{"item_id", item_["id"]}, {"output_index", output_.size()}, {"delta", piece}};
    if (open_ == Item::function_call) return event("response.function_call_arguments.delta", data);
    data["content_index"] = 0;
    if (open_ == Item::reasoning) return event("response.reasoning_text.delta", data);
    data["logprobs"] = json::array();
    return event("response.output_text.delta", data);
}

std::string ResponseStream::close(const std::string& status) {
    if (open_ == Item::none) return "";
    const std::string id = item_["id"];
    const size_t index = output_.size();
    std::string out;
    json item;
    if (open_ == Item::function_call) {
        item = function_call_item(id, item_["call_id"], item_["name"], text_, status);
        out += event("response.function_call_arguments.done", {{"item_id", id},
                                                               {"output_index", index},
                                                               {"name", item_["name"]},
                                                               {"arguments", text_}});
    } else {
        const bool reasoning = open_ == Item::reasoning;
        item = reasoning ? reasoning_item(id, text_, status) : message_item(id, text_, status);
        json done = {
            {"item_id", id}, {"output_index", index}, {"content_index", 0}, {"text", text_}};
        if (!reasoning) done["logprobs"] = json::array();
        out += event(reasoning ? "response.reasoning_text.done" : "response.output_text.done",
                     std::move(done));
        out += event("response.content_part.done", {{"item_id", id},
                                                    {"output_index", index},
                                                    {"content_index", 0},
                                                    {"part", item["content"][0]}});
    }
    out += event("response.output_item.done", {{"output_index", index}, {"item", item}});
    output_.push_back(std::move(item));
    open_ = Item::none;
    return out;
}

std::string ResponseStream::add(const ReplyDelta& d, const std::vector<std::string>& call_ids) {
    std::string out;
    if (!d.reasoning.empty()) {
        if (open_ != Item::reasoning)
            out += open(Item::reasoning, reasoning_item("rs_" + random_id(), "", "in_progress"));
        out += delta(d.reasoning);
    }
    if (!d.content.empty()) {
        if (open_ != Item::message)
            out += open(Item::message, message_item("msg_" + random_id(), "", "in_progress"));
        out += delta(d.content);
    }
    for (const CallDelta& c : d.calls) {
        // Calls are read one after another, so a call's later pieces come
        // while its item is the open one.
        if (c.first)
            out += open(Item::function_call,
                        function_call_item("fc_" + random_id(), call_ids.at(c.index), c.name, "",
                                           "in_progress"));
        if (!c.arguments.empty()) out += delta(c.arguments);
    }
    return out;
}

std::string ResponseStream::finish(const std::string& finish_reason, const JobUsage& usage) {
    const std::string status = response_status(finish_reason);
    std::string out = close(status);
    return out + event(status == "completed" ? "response.completed" : "response.incomplete",
                       {{"response", response_json(meta_, status, output_, &usage)}});
}

std::string ResponseStream::error(const ApiError& e) {
    return event("error", {{"code", e.code.empty() ? json() : json(e.code)},
                           {"message", e.what()},
                           {"param", e.param.empty() ? json() : json(e.param)}});
}

}  // namespace anelm::server
