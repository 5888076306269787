// Qwen3.5's calls (and Qwen3-Coder's): XML around each parameter,
// <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call>.
// The template writes objects and arrays as JSON and anything else as Python's
// str(), so a value is a string where the tool's schema says so, else JSON
// when it reads as JSON.
#include "server/tool_format.h"

namespace anelm::server {

namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view open_tag = "<tool_call>", close_tag = "</tool_call>";

ojson parameter_value(const ToolRequest& tools, const std::string& function, const std::string& key,
                      const std::string& text) {
    if (const ToolSpec* spec = tools.find(function)) {
        const ojson& props = spec->parameters.value("properties", ojson::object());
        if (props.is_object() && props.contains(key) && props[key].is_object() &&
            props[key].value("type", "") == "string")
            return text;
    }
    if (text == "True" || text == "False") return text == "True";
    if (text == "None") return nullptr;
    ojson v = ojson::parse(text, nullptr, false);
    return v.is_discarded() ? ojson(text) : v;
}

Scan read_xml_call(std::string_view t, size_t& pos, ToolCall& call, const ToolRequest& tools) {
    for (std::string_view lit : {open_tag, std::string_view("<function=")}) {
        skip_space(t, pos);
        if (const Scan s = expect(t, pos, lit); s != Scan::done) return s;
    }
    std::string name;
    if (const Scan s = read_until(t, pos, ">", name); s != Scan::done) return s;
    call.name = name;
    ArgumentsText args;
    call.arguments = args.text(false);
    while (true) {
        skip_space(t, pos);
        size_t at = pos;
        const Scan end = expect(t, at, "</function>");
        if (end == Scan::done) {
            pos = at;
            break;
        }
        if (const Scan s = expect(t, pos, "<parameter="); s != Scan::done)
            return s == Scan::more || end == Scan::more ? Scan::more : Scan::bad;
        std::string key, value;
        if (const Scan s = read_until(t, pos, ">", key); s != Scan::done) return s;
        if (const Scan s = read_until(t, pos, "</parameter>", value); s != Scan::done) return s;
        if (!value.empty() && value.front() == '\n') value.erase(0, 1);
        if (!value.empty() && value.back() == '\n') value.pop_back();
        args.add(key, parameter_value(tools, name, key, value));
        call.arguments = args.text(false);
    }
    call.arguments = args.text(true);
    skip_space(t, pos);
    return expect(t, pos, close_tag);
}

class QwenXmlFormat : public ToolFormat {
public:
    std::string_view name() const override { return "qwen3.5"; }
    std::vector<std::string_view> markers() const override { return {open_tag}; }
    CallScan scan(std::string_view text, const ToolRequest& tools) const override {
        return scan_calls(text, [&](std::string_view t, size_t& pos, ToolCall& call) {
            return read_xml_call(t, pos, call, tools);
        });
    }
    // Forced calls are JSON in the tags, as Qwen2.5 and Qwen3 write them.
    std::string forced_prefix() const override { return std::string(open_tag) + "\n"; }
};

}  // namespace

const ToolFormat& qwen_xml_tool_format() {
    static const QwenXmlFormat format;
    return format;
}

}  // namespace anelm::server
