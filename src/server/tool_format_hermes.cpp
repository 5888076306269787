// Qwen2.5's and Qwen3's calls (Hermes' format): each a JSON object in tags,
// <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>.
#include "server/tool_format.h"

namespace anelm::server {

namespace {

constexpr std::string_view open_tag = "<tool_call>", close_tag = "</tool_call>";

Scan read_tagged_call(std::string_view t, size_t& pos, ToolCall& call) {
    if (const Scan s = expect(t, pos, open_tag); s != Scan::done) return s;
    if (const Scan s = read_json_call(t, pos, call); s != Scan::done) return s;
    skip_space(t, pos);
    return expect(t, pos, close_tag);
}

class HermesFormat : public ToolFormat {
public:
    std::string_view name() const override { return "hermes"; }
    std::vector<std::string_view> markers() const override { return {open_tag}; }
    CallScan scan(std::string_view text, const ToolRequest&) const override {
        return scan_calls(text, read_tagged_call);
    }
    std::string forced_prefix() const override { return std::string(open_tag) + "\n"; }
};

}  // namespace

const ToolFormat& hermes_tool_format() {
    static const HermesFormat format;
    return format;
}

}  // namespace anelm::server
