#include "server/tool_format.h"

namespace anelm::server {

namespace {

// What the call being read adds to a scan: a call whose name is known is
// shown while it is written; the rest of an unfinished one waits.
bool add_unfinished(CallScan& out, Scan s, ToolCall& call, size_t size) {
    if (s == Scan::bad) {
        out.bad = true;
        return true;
    }
    if (s == Scan::more) {
        if (!call.name.empty()) {
            out.calls.push_back(std::move(call));
            out.end = size;
        }
        return true;
    }
    return false;
}

// Literals with optional space before each.
Scan expect_all(std::string_view t, size_t& pos, const std::vector<std::string_view>& lits) {
    for (std::string_view lit : lits) {
        skip_space(t, pos);
        if (const Scan s = expect(t, pos, lit); s != Scan::done) return s;
    }
    return Scan::done;
}

class ForcedCallFormat : public ToolFormat {
public:
    std::string_view name() const override { return "forced"; }
    std::vector<std::string_view> markers() const override { return {""}; }
    CallScan scan(std::string_view text, const ToolRequest&) const override {
        return scan_calls(text, read_json_call);
    }
};

}  // namespace

CallScan scan_calls(std::string_view t, const ReadCall& read_call) {
    CallScan out;
    while (true) {
        size_t pos = out.end;
        skip_space(t, pos);
        if (pos >= t.size()) return out;
        ToolCall call;
        const Scan s = read_call(t, pos, call);
        if (add_unfinished(out, s, call, t.size())) return out;
        call.done = true;
        out.calls.push_back(std::move(call));
        out.end = pos;
    }
}

CallScan scan_list(std::string_view t, const std::vector<std::string_view>& open,
                   const std::vector<std::string_view>& close, const ReadCall& read_call) {
    CallScan out;
    size_t pos = 0;
    Scan s = expect_all(t, pos, open);
    while (s == Scan::done) {
        if (!out.calls.empty()) {  // after a call, a comma or the close
            skip_space(t, pos);
            if (pos < t.size() && t[pos] == ',') {
                ++pos;
            } else {
                s = expect_all(t, pos, close);
                if (s == Scan::done) out.end = pos;
                break;
            }
        }
        ToolCall call;
        s = read_call(t, pos, call);
        if (add_unfinished(out, s, call, t.size())) return out;
        call.done = true;
        out.calls.push_back(std::move(call));
    }
    out.bad = s == Scan::bad;
    if (s == Scan::more && !out.calls.empty()) out.end = t.size();  // the close is coming
    return out;
}

void ToolFormat::add_tools(nlohmann::ordered_json&, nlohmann::ordered_json& variables,
                           const ToolRequest& tools) const {
    if (tools.active()) variables["tools"] = tools.declared;
}

const ToolFormat& forced_call_format() {
    static const ForcedCallFormat format;
    return format;
}

const ToolFormat& tool_format_for(std::string_view source) {
    const auto has = [&](std::string_view s) { return source.find(s) != std::string_view::npos; };
    if (!has("tools")) return json_convention_format();
    if (has("<|tool_call>")) return gemma4_tool_format();
    if (has("<|tool_call_start|>") || has("List of tools")) return lfm2_tool_format();
    if (has("<function=")) return qwen_xml_tool_format();
    if (has("<tool_call>")) return hermes_tool_format();
    if (has("<|python_tag|>") || has("<|start_header_id|>")) return llama3_tool_format();
    return json_convention_format();
}

}  // namespace anelm::server
