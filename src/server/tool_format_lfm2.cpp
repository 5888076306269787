// LFM2's calls: a Python list of calls between its tokens,
// <|tool_call_start|>[f(a='x', b=2), g()]<|tool_call_end|>, or, when its
// system message asks for JSON, a JSON list of {"name", "arguments"} objects.
#include "server/tool_format.h"

namespace anelm::server {

namespace {

constexpr std::string_view open_tag = "<|tool_call_start|>", close_tag = "<|tool_call_end|>";

Scan read_python_call(std::string_view t, size_t& pos, ToolCall& call) {
    skip_space(t, pos);
    if (pos < t.size() && t[pos] == '{') return read_json_call(t, pos, call);
    std::string name;
    if (const Scan s = read_until(t, pos, "(", name); s != Scan::done) return s;
    if (name.empty() || name.find_first_of(" \n,[]{}\"'") != std::string::npos) return Scan::bad;
    call.name = name;
    ArgumentsText args;
    call.arguments = args.text(false);
    while (true) {
        skip_space(t, pos);
        if (pos >= t.size()) return Scan::more;
        if (t[pos] == ')') break;
        std::string key;
        if (const Scan s = read_until(t, pos, "=", key); s != Scan::done) return s;
        while (!key.empty() && key.back() == ' ') key.pop_back();
        if (key.empty() || key.find_first_of(" \n,()[]{}\"'") != std::string::npos)
            return Scan::bad;
        nlohmann::ordered_json value;
        if (const Scan s = read_loose_value(t, pos, value); s != Scan::done) return s;
        args.add(key, value);
        call.arguments = args.text(false);
        skip_space(t, pos);
        if (pos < t.size() && t[pos] == ',') ++pos;
    }
    ++pos;
    call.arguments = args.text(true);
    return Scan::done;
}

class Lfm2Format : public ToolFormat {
public:
    std::string_view name() const override { return "lfm2"; }
    std::vector<std::string_view> markers() const override { return {open_tag}; }
    CallScan scan(std::string_view text, const ToolRequest&) const override {
        return scan_list(text, {open_tag, "["}, {"]", close_tag}, read_python_call);
    }
    std::string forced_prefix() const override { return std::string(open_tag) + "["; }
};

}  // namespace

const ToolFormat& lfm2_tool_format() {
    static const Lfm2Format format;
    return format;
}

}  // namespace anelm::server
