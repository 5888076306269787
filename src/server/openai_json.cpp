#include "server/openai_json.h"

#include <atomic>
#include <chrono>
#include <random>

#include <fmt/format.h>

namespace anelm::server {

namespace {

using json = nlohmann::json;

// A token's text (json_text replaces the invalid UTF-8 of part of a character)
// and its exact bytes.
json token_entry(const Tokenizer& tokenizer, int32_t id, float logprob) {
    const std::string text = tokenizer.token_bytes(id);
    json bytes = json::array();
    for (unsigned char c : text) bytes.push_back(c);
    return {{"token", text},
            {"logprob", logprob},
            {"bytes", bytes}};
}

}  // namespace

std::string random_id() {
    static std::atomic<uint64_t> counter{0};
    static const uint64_t salt = std::random_device{}();
    return fmt::format("{:016x}", salt ^ (++counter * 0x9e3779b97f4a7c15ull));
}

ResponseHead new_response_head(bool chat, const std::string& model) {
    ResponseHead head;
    head.chat = chat;
    head.id = (chat ? "chatcmpl-" : "cmpl-") + random_id();
    head.created = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
    head.model = model;
    return head;
}

json usage_json(const JobUsage& usage) {
    return {{"prompt_tokens", usage.prompt_tokens},
            {"completion_tokens", usage.completion_tokens},
            {"total_tokens", usage.prompt_tokens + usage.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", usage.cached_tokens}}}};
}

json logprobs_json(const ResponseHead& head, const Tokenizer& tokenizer,
                   const std::vector<TokenLogprob>& logprobs, size_t text_offset0) {
    if (head.chat) {
        json content = json::array();
        for (const TokenLogprob& lp : logprobs) {
            json entry = token_entry(tokenizer, lp.id, lp.logprob);
            json top = json::array();
            for (const auto& [id, x] : lp.top) top.push_back(token_entry(tokenizer, id, x));
            entry["top_logprobs"] = std::move(top);
            content.push_back(std::move(entry));
        }
        return {{"content", std::move(content)}};
    }
    json tokens = json::array(), token_logprobs = json::array(), tops = json::array(),
         offsets = json::array();
    size_t offset = text_offset0;
    for (const TokenLogprob& lp : logprobs) {
        const std::string text = tokenizer.token_bytes(lp.id);
        tokens.push_back(text);
        token_logprobs.push_back(lp.logprob);
        json top = json::object();
        for (const auto& [id, x] : lp.top) top[tokenizer.token_bytes(id)] = x;
        tops.push_back(std::move(top));
        offsets.push_back(offset);
        offset += text.size();
    }
    return {{"tokens", tokens},
            {"token_logprobs", token_logprobs},
            {"top_logprobs", tops},
            {"text_offset", offsets}};
}

json completion_json(const ResponseHead& head, const std::string& text,
                     const std::string& finish_reason, const JobUsage& usage,
                     const json& logprobs) {
    return completion_json(head,
                           head.chat ? json{{"role", "assistant"}, {"content", text}} : json(text),
                           finish_reason, usage, logprobs);
}

json completion_json(const ResponseHead& head, json message, const std::string& finish_reason,
                     const JobUsage& usage, const json& logprobs) {
    json choice = {{"index", 0}};
    choice[head.chat ? "message" : "text"] = std::move(message);
    choice["logprobs"] = logprobs;
    choice["finish_reason"] = finish_reason;
    return {{"id", head.id},
            {"object", head.chat ? "chat.completion" : "text_completion"},
            {"created", head.created},
            {"model", head.model},
            {"choices", json::array({choice})},
            {"usage", usage_json(usage)}};
}

json chunk_json(const ResponseHead& head, const std::string* text, bool role,
                const std::string& finish_reason, const json& logprobs) {
    if (head.chat) {
        json delta = json::object();
        if (role) delta["role"] = "assistant";
        if (text) delta["content"] = *text;
        if (role && !text) delta["content"] = "";
        return chunk_json(head, std::move(delta), finish_reason, logprobs);
    }
    return chunk_json(head, json(text ? *text : ""), finish_reason, logprobs);
}

json chunk_json(const ResponseHead& head, json delta, const std::string& finish_reason,
                const json& logprobs) {
    json choice = {{"index", 0}};
    choice[head.chat ? "delta" : "text"] = std::move(delta);
    choice["logprobs"] = logprobs;
    choice["finish_reason"] = finish_reason.empty() ? json() : json(finish_reason);
    return {{"id", head.id},
            {"object", head.chat ? "chat.completion.chunk" : "text_completion"},
            {"created", head.created},
            {"model", head.model},
            {"choices", json::array({choice})}};
}

std::string new_call_id() {
    return "call_" + random_id();
}

json chat_message_json(const ReplyParts& parts, const std::vector<std::string>& ids) {
    json message = {{"role", "assistant"}};
    message["content"] =
        parts.content.empty() && !parts.calls.empty() ? json() : json(parts.content);
    if (!parts.reasoning.empty()) message["reasoning_content"] = parts.reasoning;
    if (parts.calls.empty()) return message;
    json calls = json::array();
    for (size_t i = 0; i < parts.calls.size(); ++i)
        calls.push_back(
            {{"id", ids.at(i)},
             {"type", "function"},
             {"function",
              {{"name", parts.calls[i].name}, {"arguments", parts.calls[i].arguments}}}});
    message["tool_calls"] = std::move(calls);
    return message;
}

json chat_delta_json(const ReplyDelta& delta, const std::vector<std::string>& ids) {
    json out = json::object();
    if (!delta.content.empty()) out["content"] = delta.content;
    if (!delta.reasoning.empty()) out["reasoning_content"] = delta.reasoning;
    if (delta.calls.empty()) return out;
    json calls = json::array();
    for (const CallDelta& c : delta.calls) {
        json call = {{"index", c.index}};
        if (c.first) {
            call["id"] = ids.at(c.index);
            call["type"] = "function";
            call["function"] = {{"name", c.name}, {"arguments", c.arguments}};
        } else {
            call["function"] = {{"arguments", c.arguments}};
        }
        calls.push_back(std::move(call));
    }
    out["tool_calls"] = std::move(calls);
    return out;
}

json usage_chunk_json(const ResponseHead& head, const JobUsage& usage) {
    return {{"id", head.id},
            {"object", head.chat ? "chat.completion.chunk" : "text_completion"},
            {"created", head.created},
            {"model", head.model},
            {"choices", json::array()},
            {"usage", usage_json(usage)}};
}

std::string json_text(const json& value) {
    return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string sse_event(const json& data) {
    return "data: " + json_text(data) + "\n\n";
}

}  // namespace anelm::server
