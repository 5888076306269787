#include "server/ollama_stream.h"

#include "server/ollama_api.h"
#include "server/openai_json.h"

namespace anelm::server {

namespace {

using json = nlohmann::json;

int64_t nanoseconds(std::chrono::steady_clock::duration d) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

json calls_json(const ReplyParts& parts, const std::vector<std::string>& ids) {
    json calls = json::array();
    for (size_t i = 0; i < parts.calls.size(); ++i)
        calls.push_back({{"id", ids.at(i)},
                         {"function",
                          {{"index", i},
                           {"name", parts.calls[i].name},
                           {"arguments", arguments_object(parts.calls[i].arguments)}}}});
    return calls;
}

}  // namespace

void OllamaTimer::tokens_came() {
    last_ = std::chrono::steady_clock::now();
    if (!began_) first_ = last_;
    began_ = true;
}

json OllamaTimer::metrics(const JobUsage& usage) const {
    const auto end = began_ ? last_ : std::chrono::steady_clock::now();
    const auto first = began_ ? first_ : end;
    return {{"total_duration", nanoseconds(end - start_)},
            {"load_duration", 0},
            {"prompt_eval_count", usage.prompt_tokens},
            {"prompt_eval_duration", nanoseconds(first - start_)},
            {"eval_count", usage.completion_tokens},
            {"eval_duration", nanoseconds(end - first)}};
}

std::string ollama_done_reason(const std::string& finish_reason) {
    return finish_reason == "length" ? "length" : "stop";
}

std::string ndjson_line(const json& value) {
    return json_text(value) + "\n";
}

json OllamaReply::object(const std::string& content, const std::string& thinking, json calls,
                         bool done) const {
    json out = {{"model", model_}, {"created_at", ollama_time(std::chrono::system_clock::now())}};
    if (chat_) {
        json message = {{"role", "assistant"}, {"content", content}};
        if (!thinking.empty()) message["thinking"] = thinking;
        if (!calls.empty()) message["tool_calls"] = std::move(calls);
        out["message"] = std::move(message);
    } else {
        out["response"] = content;
        if (!thinking.empty()) out["thinking"] = thinking;
    }
    out["done"] = done;
    return out;
}

std::string OllamaReply::piece(const ReplyDelta& delta) const {
    if (delta.content.empty() && delta.reasoning.empty()) return "";
    return ndjson_line(object(delta.content, delta.reasoning, json::array(), false));
}

std::string OllamaReply::finish(const ReplyParts& parts, const std::vector<std::string>& ids,
                                const std::string& done_reason, const json& metrics) const {
    std::string out;
    if (!parts.calls.empty()) out = ndjson_line(object("", "", calls_json(parts, ids), false));
    json last = object("", "", json::array(), true);
    last["done_reason"] = done_reason;
    last.update(metrics);
    return out + ndjson_line(last);
}

json OllamaReply::whole(const ReplyParts& parts, const std::vector<std::string>& ids,
                        const std::string& done_reason, const json& metrics) const {
    json out = object(parts.content, parts.reasoning, calls_json(parts, ids), true);
    out["done_reason"] = done_reason;
    out.update(metrics);
    return out;
}

}  // namespace anelm::server
