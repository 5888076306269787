#include "server/tool_request.h"

#include <set>

#include "server/api_error.h"
#include "server/completion_request.h"

namespace anelm::server {

namespace {

using ojson = nlohmann::ordered_json;

std::string name_of(const ojson& v, const std::string& field) {
    if (!v.is_string() || v.get<std::string>().empty())
        bad_field(field, "{}: expected the function's name", field);
    return v.get<std::string>();
}

ToolSpec read_tool(const ojson& tool, const std::string& at) {
    if (!tool.is_object()) bad_field(at, "{}: expected an object", at);
    const ojson& type = body_field(tool, "type");
    if (!type.is_string() || type.get<std::string>() != "function")
        bad_field(at + ".type", "{}.type: expected \"function\"", at);
    const ojson& fn = body_field(tool, "function");
    if (!fn.is_object()) bad_field(at + ".function", "{}.function: expected an object", at);
    ToolSpec spec;
    spec.name = name_of(body_field(fn, "name"), at + ".function.name");
    const std::string where = at + ".function.parameters";
    spec.parameters = body_field(fn, "parameters");
    if (spec.parameters.is_null())
        spec.parameters = {{"type", "object"}, {"properties", ojson::object()}};
    if (!spec.parameters.is_object()) bad_field(where, "{}: expected a JSON schema object", where);
    const ojson& ptype = body_field(spec.parameters, "type");
    if (!ptype.is_null() && ptype != "object")
        bad_field(where, "{}.type: expected \"object\" (arguments are an object)", where);
    const ojson& props = body_field(spec.parameters, "properties");
    if (!props.is_null() && !props.is_object())
        bad_field(where, "{}.properties: expected an object", where);
    return spec;
}

void read_choice(const ojson& v, ToolRequest& r) {
    if (v.is_null()) return;
    if (v.is_string()) {
        const std::string s = v.get<std::string>();
        if (s == "none")
            r.choice = ToolChoice::none;
        else if (s == "auto")
            r.choice = ToolChoice::auto_;
        else if (s == "required")
            r.choice = ToolChoice::required;
        else
            bad_field("tool_choice", "tool_choice: '{}', expected none, auto or required", s);
        return;
    }
    if (!v.is_object() || body_field(v, "type") != "function" ||
        !body_field(v, "function").is_object())
        bad_field("tool_choice",
                  "tool_choice: expected none, auto, required or "
                  "{{\"type\": \"function\", \"function\": {{\"name\": ...}}}}");
    r.named = name_of(body_field(body_field(v, "function"), "name"), "tool_choice.function.name");
    if (!r.find(r.named)) bad_field("tool_choice", "tool_choice: no tool is named '{}'", r.named);
    r.choice = ToolChoice::named;
}

}  // namespace

const ToolSpec* ToolRequest::find(const std::string& name) const {
    for (const ToolSpec& t : tools)
        if (t.name == name) return &t;
    return nullptr;
}

ToolRequest read_tool_request(const ojson& body) {
    ToolRequest r;
    const ojson& tools = body_field(body, "tools");
    if (!tools.is_null()) {
        if (!tools.is_array()) bad_field("tools", "tools: expected an array of tools");
        std::set<std::string> names;
        for (size_t i = 0; i < tools.size(); ++i) {
            const std::string at = fmt::format("tools[{}]", i);
            r.tools.push_back(read_tool(tools[i], at));
            if (!names.insert(r.tools.back().name).second)
                bad_field(at + ".function.name", "{}.function.name: '{}' is named twice", at,
                          r.tools.back().name);
        }
        if (!r.tools.empty()) {
            r.declared = tools;
            r.choice = ToolChoice::auto_;  // OpenAI's default once tools are given
        }
    }
    const ojson& choice = body_field(body, "tool_choice");
    if (r.tools.empty() && !choice.is_null() && choice != "none" && choice != "auto")
        bad_field("tool_choice", "tool_choice: no tools are given");
    read_choice(choice, r);
    if (const ojson& v = body_field(body, "parallel_tool_calls"); !v.is_null()) {
        if (!v.is_boolean())
            bad_field("parallel_tool_calls", "parallel_tool_calls: expected true or false");
        r.parallel = v.get<bool>();
    }
    return r;
}

void read_tool_turns(ojson& messages) {
    std::set<std::string> ids;  // of calls made so far
    size_t calls = 0, answered = 0;
    for (size_t i = 0; i < messages.size(); ++i) {
        ojson& m = messages[i];
        const std::string at = fmt::format("messages[{}]", i);
        const std::string role = m["role"].get<std::string>();
        if (role == "assistant" && m.contains("tool_calls") && !m["tool_calls"].is_null()) {
            ojson& tc = m["tool_calls"];
            if (!tc.is_array())
                bad_field(at + ".tool_calls", "{}.tool_calls: expected an array", at);
            for (size_t k = 0; k < tc.size(); ++k) {
                const std::string call = fmt::format("{}.tool_calls[{}]", at, k);
                ojson& fn = tc[k].is_object() ? tc[k]["function"] : tc[k];
                if (!fn.is_object()) bad_field(call, "{}: expected {{id, type, function}}", call);
                name_of(body_field(fn, "name"), call + ".function.name");
                ojson& args = fn["arguments"];
                if (args.is_null()) args = ojson::object();
                if (args.is_string()) {
                    ojson parsed = ojson::parse(args.get<std::string>(), nullptr, false);
                    if (!parsed.is_object())
                        bad_field(call + ".function.arguments",
                                  "{}.function.arguments: expected a JSON object", call);
                    args = std::move(parsed);
                }
                if (!args.is_object())
                    bad_field(call + ".function.arguments",
                              "{}.function.arguments: expected a JSON object", call);
                if (const ojson& id = body_field(tc[k], "id"); id.is_string())
                    ids.insert(id.get<std::string>());
                ++calls;
            }
        } else if (role == "tool") {
            const ojson& id = body_field(m, "tool_call_id");
            if (!id.is_null() && !id.is_string())
                bad_field(at + ".tool_call_id", "{}.tool_call_id: expected a string", at);
            const bool known =
                id.is_string() ? ids.count(id.get<std::string>()) > 0 : answered < calls;
            if (!known)
                bad_field(at, "{}: a tool result{} answers no tool call made before it", at,
                          id.is_string() ? " for '" + id.get<std::string>() + "'" : "");
            ++answered;
        }
    }
}

}  // namespace anelm::server
