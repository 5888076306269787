// Gemma 4's calls, in its function-call tokens:
// <|tool_call>call:NAME{key:<|"|>text<|"|>,n:2}<tool_call|>, keys bare and
// strings between <|"|> marks.
#include "server/tool_format.h"

namespace anelm::server {

namespace {

constexpr std::string_view open_tag = "<|tool_call>", close_tag = "<tool_call|>";

Scan read_gemma4_call(std::string_view t, size_t& pos, ToolCall& call) {
    if (const Scan s = expect(t, pos, open_tag); s != Scan::done) return s;
    if (const Scan s = expect(t, pos, "call:"); s != Scan::done) return s;
    std::string name;
    if (const Scan s = read_until(t, pos, "{", name); s != Scan::done) return s;
    call.name = name;
    --pos;  // the arguments are the object that begins at the brace
    nlohmann::ordered_json args;
    if (const Scan s = read_loose_value(t, pos, args); s != Scan::done) return s;
    call.arguments = args.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    return expect(t, pos, close_tag);
}

class Gemma4Format : public ToolFormat {
public:
    std::string_view name() const override { return "gemma4"; }
    std::vector<std::string_view> markers() const override { return {open_tag}; }
    CallScan scan(std::string_view text, const ToolRequest&) const override {
        return scan_calls(text, read_gemma4_call);
    }
};

}  // namespace

const ToolFormat& gemma4_tool_format() {
    static const Gemma4Format format;
    return format;
}

}  // namespace anelm::server
