#include "server/anthropic_messages.h"

#include <set>

#include "server/openai_json.h"

namespace anelm::server {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// One Messages message as chat messages: tool_result blocks become role
// "tool" messages in their place, tool_use blocks the assistant's tool_calls
// and thinking blocks its reasoning_content. calls: the tool_use ids so far.
void add_message(const ojson& m, const std::string& at, std::set<std::string>& calls, ojson& out) {
    const std::string role = string_value(object_member(m, at, "role"), at + ".role");
    if (role != "user" && role != "assistant")
        bad_field(at + ".role", "{}.role: '{}', expected user or assistant", at, role);
    const ojson& content = body_field(m, "content");
    if (content.is_string()) {
        out.push_back({{"role", role}, {"content", content}});
        return;
    }
    if (!content.is_array())
        bad_field(at + ".content", "{}.content: expected a string or an array of blocks", at);
    std::string text, thinking;
    ojson tool_calls = ojson::array();
    const auto flush_text = [&] {
        if (!text.empty()) out.push_back({{"role", role}, {"content", text}});
        text.clear();
    };
    for (size_t i = 0; i < content.size(); ++i) {
        const std::string block = fmt::format("{}.content[{}]", at, i);
        const ojson& b = content[i];
        const std::string type = string_value(object_member(b, block, "type"), block + ".type");
        if (type == "text") {
            text += string_value(body_field(b, "text"), block + ".text");
        } else if (type == "thinking" && role == "assistant") {
            thinking += string_value(body_field(b, "thinking"), block + ".thinking");
        } else if (type == "redacted_thinking" && role == "assistant") {
            // Encrypted by Anthropic: nothing a local model can read.
        } else if (type == "tool_use" && role == "assistant") {
            const std::string id = string_value(body_field(b, "id"), block + ".id");
            const std::string name = string_value(body_field(b, "name"), block + ".name");
            ojson input = body_field(b, "input");
            if (input.is_null()) input = ojson::object();
            if (!input.is_object())
                bad_field(block + ".input", "{}.input: expected an object", block);
            calls.insert(id);
            tool_calls.push_back({{"id", id},
                                  {"type", "function"},
                                  {"function", {{"name", name}, {"arguments", input}}}});
        } else if (type == "tool_result" && role == "user") {
            const std::string id = string_value(body_field(b, "tool_use_id"), block + ".tool_use_id");
            if (!calls.count(id))
                bad_field(block + ".tool_use_id",
                          "{}: a tool_result for '{}' answers no tool_use made before it", block,
                          id);
            flush_text();
            out.push_back({{"role", "tool"},
                           {"tool_call_id", id},
                           {"content", joined_text(body_field(b, "content"), block + ".content", {"text"})}});
        } else {
            bad_field(block + ".type", "{}.type: '{}' blocks are not supported in {} messages",
                      block, type, role);
        }
    }
    if (role == "user") return flush_text();
    ojson message = {{"role", "assistant"}, {"content", text}};
    if (!thinking.empty()) message["reasoning_content"] = thinking;
    if (!tool_calls.empty()) message["tool_calls"] = std::move(tool_calls);
    out.push_back(std::move(message));
}

ojson read_tools(const ojson& tools) {
    if (!tools.is_array()) bad_field("tools", "tools: expected an array of tools");
    ojson out = ojson::array();
    for (size_t i = 0; i < tools.size(); ++i) {
        const std::string at = fmt::format("tools[{}]", i);
        const ojson& t = tools[i];
        if (const ojson& type = object_member(t, at, "type"); !type.is_null() && type != "custom")
            bad_field(at + ".type", "{}.type: {} tools are not supported (custom tools only)", at,
                      type.dump());
        const ojson& name = body_field(t, "name");
        if (!name.is_string() || name.get<std::string>().empty())
            bad_field(at + ".name", "{}.name: expected the tool's name", at);
        const ojson& schema = body_field(t, "input_schema");
        if (!schema.is_object())
            bad_field(at + ".input_schema", "{}.input_schema: expected a JSON schema object", at);
        if (const ojson& type = body_field(schema, "type"); !type.is_null() && type != "object")
            bad_field(at + ".input_schema",
                      "{}.input_schema.type: expected \"object\" (inputs are objects)", at);
        ojson fn = {{"name", name}, {"parameters", schema}};
        if (const ojson& d = body_field(t, "description"); !d.is_null())
            fn["description"] = string_value(d, at + ".description");
        out.push_back({{"type", "function"}, {"function", std::move(fn)}});
    }
    return out;
}

void read_tool_choice(const ojson& v, ojson& chat) {
    const std::string type = string_value(object_member(v, "tool_choice", "type"), "tool_choice.type");
    if (type == "auto" || type == "none") {
        chat["tool_choice"] = type;
    } else if (type == "any") {
        chat["tool_choice"] = "required";
    } else if (type == "tool") {
        const std::string name = string_value(body_field(v, "name"), "tool_choice.name");
        chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", name}}}};
    } else {
        bad_field("tool_choice.type", "tool_choice.type: '{}', expected auto, any, tool or none",
                  type);
    }
    if (const ojson& d = body_field(v, "disable_parallel_tool_use"); !d.is_null()) {
        if (!d.is_boolean())
            bad_field("tool_choice.disable_parallel_tool_use",
                      "tool_choice.disable_parallel_tool_use: expected true or false");
        chat["parallel_tool_calls"] = !d.get<bool>();
    }
}

// thinking {type: enabled|disabled} as the enable_thinking template variable
// (Qwen3's); budget_tokens is not enforced.
void read_thinking(const ojson& v, ojson& chat) {
    const std::string type = string_value(object_member(v, "thinking", "type"), "thinking.type");
    if (type != "enabled" && type != "disabled")
        bad_field("thinking.type", "thinking.type: '{}', expected enabled or disabled", type);
    chat["chat_template_kwargs"] = {{"enable_thinking", type == "enabled"}};
}

}  // namespace

ojson messages_to_chat(const ojson& body) {
    ojson chat = ojson::object();
    for (const char* same : {"model", "temperature", "top_p", "top_k", "stream"})
        if (const ojson& v = body_field(body, same); !v.is_null()) chat[same] = v;
    const ojson& max_tokens = body_field(body, "max_tokens");
    if (max_tokens.is_null()) bad_field("max_tokens", "max_tokens: required");
    chat["max_tokens"] = max_tokens;
    if (const ojson& v = body_field(body, "stop_sequences"); !v.is_null()) {
        if (!v.is_array())
            bad_field("stop_sequences", "stop_sequences: expected an array of strings");
        chat["stop"] = v;
    }
    ojson messages = ojson::array();
    if (const std::string system = joined_text(body_field(body, "system"), "system", {"text"});
        !system.empty())
        messages.push_back({{"role", "system"}, {"content", system}});
    const ojson& given = body_field(body, "messages");
    if (!given.is_array() || given.empty())
        bad_field("messages", "messages: expected a non-empty array of messages");
    std::set<std::string> calls;
    for (size_t i = 0; i < given.size(); ++i)
        add_message(given[i], fmt::format("messages[{}]", i), calls, messages);
    chat["messages"] = std::move(messages);
    if (const ojson& v = body_field(body, "tools"); !v.is_null()) chat["tools"] = read_tools(v);
    if (const ojson& v = body_field(body, "tool_choice"); !v.is_null()) read_tool_choice(v, chat);
    if (const ojson& v = body_field(body, "thinking"); !v.is_null()) read_thinking(v, chat);
    return chat;
}

CompletionRequest parse_messages_request(const ojson& body, const SamplerParams& defaults) {
    return parse_completion_request(messages_to_chat(body), true, defaults);
}

std::string new_tool_use_id() {
    return "toolu_" + random_id();
}

std::string stop_reason(const std::string& finish_reason, const std::string& stop_sequence,
                        const ReplyParts& parts) {
    if (finish_reason == "length") return "max_tokens";
    if (!stop_sequence.empty()) return "stop_sequence";
    return parts.calls.empty() ? "end_turn" : "tool_use";
}

json messages_usage_json(const JobUsage& usage) {
    return {{"input_tokens", usage.prompt_tokens}, {"output_tokens", usage.completion_tokens}};
}

json message_json(const std::string& id, const std::string& model, const ReplyParts& parts,
                  const std::vector<std::string>& ids, const std::string& stop_reason,
                  const std::string& stop_sequence, const JobUsage& usage) {
    json content = json::array();
    if (!parts.reasoning.empty())
        content.push_back({{"type", "thinking"}, {"thinking", parts.reasoning}, {"signature", ""}});
    if (!parts.content.empty()) content.push_back({{"type", "text"}, {"text", parts.content}});
    for (size_t i = 0; i < parts.calls.size(); ++i)
        content.push_back({{"type", "tool_use"},
                           {"id", ids.at(i)},
                           {"name", parts.calls[i].name},
                           {"input", arguments_object(parts.calls[i].arguments)}});
    return {{"id", id},
            {"type", "message"},
            {"role", "assistant"},
            {"model", model},
            {"content", std::move(content)},
            {"stop_reason", stop_reason},
            {"stop_sequence", stop_sequence.empty() ? json() : json(stop_sequence)},
            {"usage", messages_usage_json(usage)}};
}

json messages_error_body(const ApiError& error) {
    const char* type = "api_error";
    switch (error.status) {
        case 400:
            type = "invalid_request_error";
            break;
        case 401:
            type = "authentication_error";
            break;
        case 403:
            type = "permission_error";
            break;
        case 404:
            type = "not_found_error";
            break;
        case 413:
            type = "request_too_large";
            break;
        case 429:
            type = "rate_limit_error";
            break;
        case 503:
            type = "overloaded_error";
            break;
        default:
            break;
    }
    return {{"type", "error"}, {"error", {{"type", type}, {"message", error.what()}}}};
}

}  // namespace anelm::server
