// Tools for a template that has no tool format (Gemma 3's, the synth presets'):
// the tools are described in the system message, and the model is asked to
// reply {"tool_calls": [{"name": ..., "arguments": {...}}]}. Its past calls are
// written so in its turns, and tool results go back as user turns, so the
// template sees only the roles it knows.
#include "chat/jinja_json.h"
#include "server/tool_format.h"

namespace anelm::server {

namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view open_list = "{\"tool_calls\": [";

// As templates write JSON (json.dumps).
std::string json_text(const ojson& v) {
    return jinja::to_json(jinja::from_json(v), {});
}

std::string tools_text(const ToolRequest& tools) {
    std::string text = "You can call these functions:\n";
    for (const ojson& tool : tools.declared) text += json_text(tool["function"]) + "\n";
    text += "To call functions, reply with only a JSON object: " + std::string(open_list) +
            "{\"name\": <function name>, \"arguments\": <arguments object>}]}";
    return text;
}

// The calls of an assistant turn as its reply would write them.
std::string calls_text(const ojson& tool_calls) {
    std::string text(open_list);
    for (size_t i = 0; i < tool_calls.size(); ++i) {
        const ojson& fn =
            tool_calls[i].contains("function") ? tool_calls[i]["function"] : tool_calls[i];
        if (i > 0) text += ", ";
        text += json_text(ojson{{"name", fn["name"]}, {"arguments", fn["arguments"]}});
    }
    return text + "]}";
}

class ConventionFormat : public ToolFormat {
public:
    std::string_view name() const override { return "json"; }
    std::vector<std::string_view> markers() const override { return {open_list}; }
    CallScan scan(std::string_view text, const ToolRequest&) const override {
        return scan_list(text, {open_list}, {"]", "}"}, read_json_call);
    }
    std::string forced_prefix() const override { return std::string(open_list); }

    void add_tools(ojson& messages, ojson&, const ToolRequest& tools) const override {
        ojson out = ojson::array();
        for (ojson& m : messages) {
            const std::string role = m["role"].get<std::string>();
            if (role == "assistant" && m.contains("tool_calls") && m["tool_calls"].is_array()) {
                std::string content = m["content"].get<std::string>();
                m["content"] =
                    content + (content.empty() ? "" : "\n") + calls_text(m["tool_calls"]);
                m.erase("tool_calls");
            } else if (role == "tool") {
                const std::string result = "Function result: " + m["content"].get<std::string>();
                // Results in a row are one user turn, so roles still alternate.
                if (!out.empty() && out.back().value("tool_result", false)) {
                    out.back()["content"] =
                        out.back()["content"].get<std::string>() + "\n" + result;
                    continue;
                }
                m = {{"role", "user"}, {"content", result}, {"tool_result", true}};
            }
            out.push_back(std::move(m));
        }
        for (ojson& m : out) m.erase("tool_result");
        if (!tools.active()) {
            messages = std::move(out);
            return;
        }
        if (!out.empty() && out[0]["role"] == "system")
            out[0]["content"] = out[0]["content"].get<std::string>() + "\n\n" + tools_text(tools);
        else
            out.insert(out.begin(), ojson{{"role", "system"}, {"content", tools_text(tools)}});
        messages = std::move(out);
    }
};

}  // namespace

const ToolFormat& json_convention_format() {
    static const ConventionFormat format;
    return format;
}

}  // namespace anelm::server
