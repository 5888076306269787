#include "base/json_escape.h"

#include <fmt/format.h>

#include "base/code_point.h"

namespace anelm {

void append_json_string(std::string& out, std::string_view s, bool ensure_ascii) {
    out += '"';
    for (size_t i = 0; i < s.size();) {
        if (!ensure_ascii && static_cast<unsigned char>(s[i]) >= 0x80) {
            out += s[i++];
            continue;
        }
        const char32_t c = code_point::decode(s, i);
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            default:
                if (c >= 0x10000) {
                    const char32_t v = c - 0x10000;
                    out +=
                        fmt::format("\\u{:04x}\\u{:04x}", 0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff));
                } else if (c < 0x20 || (ensure_ascii && c >= 0x7f)) {
                    out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    out += '"';
}

}  // namespace anelm
