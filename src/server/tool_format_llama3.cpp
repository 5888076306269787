// Llama 3.x's calls: a JSON object {"name": ..., "parameters": {...}} as the
// whole reply (its templates ask for that), or after <|python_tag|>; Llama 3.2
// separates several with semicolons.
#include "server/tool_format.h"

namespace anelm::server {

namespace {

constexpr std::string_view python_tag = "<|python_tag|>";

Scan read_llama_call(std::string_view t, size_t& pos, ToolCall& call) {
    if (const Scan s = expect(t, pos, python_tag); s == Scan::more) return s;
    if (const Scan s = read_json_call(t, pos, call); s != Scan::done) return s;
    skip_space(t, pos);
    if (pos < t.size() && t[pos] == ';') ++pos;
    return Scan::done;
}

class Llama3Format : public ToolFormat {
public:
    std::string_view name() const override { return "llama3"; }
    std::vector<std::string_view> markers() const override {
        return {python_tag, "{\"name\"", "{\"type\""};
    }
    CallScan scan(std::string_view text, const ToolRequest&) const override {
        return scan_calls(text, read_llama_call);
    }
};

}  // namespace

const ToolFormat& llama3_tool_format() {
    static const Llama3Format format;
    return format;
}

}  // namespace anelm::server
