#include "server/responses_api.h"

#include <chrono>
#include <set>

#include "server/api_error.h"
#include "server/openai_json.h"

namespace anelm::server {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// A system message, joined to one just before it: Codex sends its developer
// messages after the instructions, and many templates take one system turn only.
void add_system(ojson& out, const std::string& text) {
    if (!out.empty() && out.back()["role"] == "system")
        out.back()["content"] = out.back()["content"].get<std::string>() + "\n\n" + text;
    else
        out.push_back({{"role", "system"}, {"content", text}});
}

// The chat messages of an input list, added to out. Consecutive function_call items join
// the assistant message before them as its tool_calls; function_call_output
// items become role "tool" messages; reasoning items are dropped (a template
// renders only the latest turn's thinking, which a new turn does not have).
void read_input(const ojson& input, ojson& out) {
    if (input.is_string()) {
        out.push_back({{"role", "user"}, {"content", input}});
        return;
    }
    if (!input.is_array() || input.empty())
        bad_field("input", "input: expected a string or a non-empty array of items");
    std::set<std::string> calls;  // call_ids so far
    for (size_t i = 0; i < input.size(); ++i) {
        const std::string at = fmt::format("input[{}]", i);
        const ojson& item = input[i];
        const ojson& type_field = object_member(item, at, "type");
        const std::string type =
            type_field.is_null() ? "message" : string_value(type_field, at + ".type");
        if (type == "message") {
            std::string role = string_value(body_field(item, "role"), at + ".role");
            if (role == "developer") role = "system";
            if (role != "user" && role != "assistant" && role != "system")
                bad_field(at + ".role",
                          "{}.role: '{}', expected user, assistant, system or developer", at, role);
            const std::string content = joined_text(body_field(item, "content"), at + ".content", {"input_text", "output_text"});
            if (role == "system")
                add_system(out, content);
            else
                out.push_back({{"role", role}, {"content", content}});
        } else if (type == "function_call") {
            const std::string call_id = string_value(body_field(item, "call_id"), at + ".call_id");
            const std::string name = string_value(body_field(item, "name"), at + ".name");
            const ojson args = ojson::parse(
                string_value(body_field(item, "arguments"), at + ".arguments"), nullptr, false);
            if (!args.is_object())
                bad_field(at + ".arguments", "{}.arguments: expected a JSON object as a string",
                          at);
            calls.insert(call_id);
            if (out.empty() || out.back()["role"] != "assistant")
                out.push_back({{"role", "assistant"}, {"content", ""}});
            out.back()["tool_calls"].push_back(
                {{"id", call_id},
                 {"type", "function"},
                 {"function", {{"name", name}, {"arguments", args}}}});
        } else if (type == "function_call_output") {
            const std::string call_id = string_value(body_field(item, "call_id"), at + ".call_id");
            if (!calls.count(call_id))
                bad_field(at + ".call_id",
                          "{}: a function_call_output for '{}' answers no function_call before it",
                          at, call_id);
            out.push_back({{"role", "tool"},
                           {"tool_call_id", call_id},
                           {"content", joined_text(body_field(item, "output"), at + ".output", {"input_text", "output_text"})}});
        } else if (type != "reasoning") {
            bad_field(at + ".type",
                      "{}.type: '{}' items are not supported (message, function_call, "
                      "function_call_output, reasoning)",
                      at, type);
        }
    }
}

ojson read_tools(const ojson& tools) {
    if (!tools.is_array()) bad_field("tools", "tools: expected an array of tools");
    ojson out = ojson::array();
    for (size_t i = 0; i < tools.size(); ++i) {
        const std::string at = fmt::format("tools[{}]", i);
        const ojson& t = tools[i];
        if (const std::string type = string_value(object_member(t, at, "type"), at + ".type");
            type != "function")
            bad_field(at + ".type", "{}.type: '{}' tools are not supported (function tools only)",
                      at, type);
        const ojson& name = body_field(t, "name");
        if (!name.is_string() || name.get<std::string>().empty())
            bad_field(at + ".name", "{}.name: expected the function's name", at);
        ojson fn = {{"name", name}};
        if (const ojson& p = body_field(t, "parameters"); !p.is_null()) {
            if (!p.is_object())
                bad_field(at + ".parameters", "{}.parameters: expected a JSON schema object", at);
            if (const ojson& type = body_field(p, "type"); !type.is_null() && type != "object")
                bad_field(at + ".parameters",
                          "{}.parameters.type: expected \"object\" (arguments are an object)", at);
            fn["parameters"] = p;
        }
        if (const ojson& d = body_field(t, "description"); !d.is_null())
            fn["description"] = string_value(d, at + ".description");
        out.push_back({{"type", "function"}, {"function", std::move(fn)}});
    }
    return out;
}

ojson read_tool_choice(const ojson& v) {
    if (v.is_string()) return v;  // none, auto, required: checked as chat's
    const std::string type = string_value(object_member(v, "tool_choice", "type"), "tool_choice.type");
    if (type != "function")
        bad_field("tool_choice.type",
                  "tool_choice.type: '{}', expected function (or tool_choice none, auto, required)",
                  type);
    return {{"type", "function"},
            {"function", {{"name", string_value(body_field(v, "name"), "tool_choice.name")}}}};
}

// text.format as chat's response_format.
ojson read_text_format(const ojson& text) {
    const ojson& format = object_member(text, "text", "format");
    if (format.is_null()) return ojson();
    const std::string type =
        string_value(object_member(format, "text.format", "type"), "text.format.type");
    if (type == "text" || type == "json_object") return {{"type", type}};
    if (type != "json_schema")
        bad_field("text.format.type",
                  "text.format.type: '{}', expected text, json_object or json_schema", type);
    ojson spec = {{"schema", body_field(format, "schema")}};
    if (const ojson& name = body_field(format, "name"); !name.is_null()) spec["name"] = name;
    return {{"type", "json_schema"}, {"json_schema", std::move(spec)}};
}

int64_t now_seconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// A request field echoed in the response, or `absent` when not given.
json echoed(const ojson& body, const char* name, json absent) {
    const ojson& v = body_field(body, name);
    return v.is_null() ? absent : json::parse(v.dump());
}

}  // namespace

ojson responses_to_chat(const ojson& body) {
    for (const char* kept : {"previous_response_id", "conversation"})
        if (!body_field(body, kept).is_null())
            bad_field(kept,
                      "{}: not kept: this server is stateless; send the whole conversation in "
                      "input",
                      kept);
    if (const ojson& v = body_field(body, "store"); !v.is_null() && !v.is_boolean())
        bad_field("store", "store: expected true or false");
    ojson chat = ojson::object();
    for (const char* same : {"model", "temperature", "top_p", "stream", "parallel_tool_calls"})
        if (const ojson& v = body_field(body, same); !v.is_null()) chat[same] = v;
    if (const ojson& v = body_field(body, "max_output_tokens"); !v.is_null())
        chat["max_tokens"] = v;
    ojson messages = ojson::array();
    if (const ojson& v = body_field(body, "instructions"); !v.is_null())
        add_system(messages, string_value(v, "instructions"));
    const ojson& input = body_field(body, "input");
    if (input.is_null()) bad_field("input", "input: required");
    read_input(input, messages);
    chat["messages"] = std::move(messages);
    if (const ojson& v = body_field(body, "tools"); !v.is_null()) chat["tools"] = read_tools(v);
    if (const ojson& v = body_field(body, "tool_choice"); !v.is_null())
        chat["tool_choice"] = read_tool_choice(v);
    if (const ojson& v = body_field(body, "text"); !v.is_null())
        if (ojson format = read_text_format(v); !format.is_null())
            chat["response_format"] = std::move(format);
    if (const ojson& v = body_field(body, "reasoning"); !v.is_null())
        if (const ojson& effort = object_member(v, "reasoning", "effort"); !effort.is_null())
            chat["reasoning_effort"] = string_value(effort, "reasoning.effort");
    return chat;
}

CompletionRequest parse_responses_request(const ojson& body, const SamplerParams& defaults) {
    CompletionRequest r = parse_completion_request(responses_to_chat(body), true, defaults);
    r.schema_param = "text.format.schema";
    return r;
}

ResponseMeta new_response_meta(const ojson& body, const std::string& model) {
    ResponseMeta meta;
    meta.id = "resp_" + random_id();
    meta.created_at = now_seconds();
    meta.model = model;
    meta.echo = {
        {"instructions", echoed(body, "instructions", nullptr)},
        {"max_output_tokens", echoed(body, "max_output_tokens", nullptr)},
        {"metadata", echoed(body, "metadata", json::object())},
        {"parallel_tool_calls", echoed(body, "parallel_tool_calls", true)},
        {"previous_response_id", nullptr},
        {"reasoning", echoed(body, "reasoning", {{"effort", nullptr}, {"summary", nullptr}})},
        {"store", false},
        {"temperature", echoed(body, "temperature", nullptr)},
        {"text", echoed(body, "text", {{"format", {{"type", "text"}}}})},
        {"tool_choice", echoed(body, "tool_choice", "auto")},
        {"tools", echoed(body, "tools", json::array())},
        {"top_p", echoed(body, "top_p", nullptr)},
        {"truncation", "disabled"}};
    return meta;
}

std::string response_status(const std::string& finish_reason) {
    return finish_reason == "length" ? "incomplete" : "completed";
}

json reasoning_item(const std::string& id, const std::string& text, const std::string& status) {
    return {{"id", id},
            {"type", "reasoning"},
            {"summary", json::array()},
            {"content", json::array({{{"type", "reasoning_text"}, {"text", text}}})},
            {"status", status}};
}

json output_text_part(const std::string& text) {
    return {{"type", "output_text"},
            {"text", text},
            {"annotations", json::array()},
            {"logprobs", json::array()}};
}

json message_item(const std::string& id, const std::string& text, const std::string& status) {
    return {{"id", id},
            {"type", "message"},
            {"role", "assistant"},
            {"status", status},
            {"content", json::array({output_text_part(text)})}};
}

json function_call_item(const std::string& id, const std::string& call_id, const std::string& name,
                        const std::string& arguments, const std::string& status) {
    return {{"id", id},     {"type", "function_call"}, {"call_id", call_id},
            {"name", name}, {"arguments", arguments},  {"status", status}};
}

json output_items(const ReplyParts& parts, const std::vector<std::string>& call_ids,
                  const std::string& status) {
    json out = json::array();
    if (!parts.reasoning.empty())
        out.push_back(reasoning_item("rs_" + random_id(), parts.reasoning, status));
    if (!parts.content.empty())
        out.push_back(message_item("msg_" + random_id(), parts.content, status));
    for (size_t i = 0; i < parts.calls.size(); ++i)
        out.push_back(function_call_item("fc_" + random_id(), call_ids.at(i), parts.calls[i].name,
                                         parts.calls[i].arguments, status));
    return out;
}

json response_json(const ResponseMeta& meta, const std::string& status, json output,
                   const JobUsage* usage) {
    json r = {{"id", meta.id},
              {"object", "response"},
              {"created_at", meta.created_at},
              {"status", status},
              {"error", nullptr},
              {"incomplete_details",
               status == "incomplete" ? json{{"reason", "max_output_tokens"}} : json()},
              {"model", meta.model},
              {"output", std::move(output)}};
    r.update(meta.echo);
    r["usage"] = usage ? json{{"input_tokens", usage->prompt_tokens},
                              {"input_tokens_details", {{"cached_tokens", usage->cached_tokens}}},
                              {"output_tokens", usage->completion_tokens},
                              {"output_tokens_details", {{"reasoning_tokens", 0}}},
                              {"total_tokens", usage->prompt_tokens + usage->completion_tokens}}
                       : json();
    return r;
}

}  // namespace anelm::server
