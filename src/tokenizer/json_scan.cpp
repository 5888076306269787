#include "tokenizer/json_scan.h"

#include <cstring>

#include "base/error.h"
#include "tokenizer/utf8.h"

namespace anelm {

void JsonScanner::error(std::string_view expected) const {
    fail("{}: byte offset {}: expected {}", path_, pos_, expected);
}

void JsonScanner::skip_ws() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t'))
        ++pos_;
}

char JsonScanner::peek() {
    skip_ws();
    return pos_ < s_.size() ? s_[pos_] : '\0';
}

void JsonScanner::expect(char c) {
    if (peek() != c) error(fmt::format("'{}'", c));
    ++pos_;
}

bool JsonScanner::accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
}

uint32_t JsonScanner::read_hex4() {
    if (pos_ + 4 > s_.size()) error("four hex digits after \\u");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
        const char c = s_[pos_++];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= c - '0';
        else if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            error("four hex digits after \\u");
    }
    return v;
}

void JsonScanner::read_string(std::string& out) {
    expect('"');
    out.clear();
    for (;;) {
        // Copy the run up to the next quote or backslash in one go.
        size_t end = pos_;
        while (end < s_.size() && s_[end] != '"' && s_[end] != '\\') ++end;
        out.append(s_.substr(pos_, end - pos_));
        pos_ = end;
        if (pos_ >= s_.size()) error("the end of the string");
        if (s_[pos_++] == '"') {
            // The regex engine runs on these strings and assumes valid UTF-8.
            if (utf8::find_invalid(out) != std::string::npos) error("a string of valid UTF-8");
            return;
        }
        if (pos_ >= s_.size()) error("an escape");
        const char e = s_[pos_++];
        switch (e) {
            case '"':
                out += '"';
                break;
            case '\\':
                out += '\\';
                break;
            case '/':
                out += '/';
                break;
            case 'b':
                out += '\b';
                break;
            case 'f':
                out += '\f';
                break;
            case 'n':
                out += '\n';
                break;
            case 'r':
                out += '\r';
                break;
            case 't':
                out += '\t';
                break;
            case 'u': {
                uint32_t cp = read_hex4();
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (s_.substr(pos_, 2) != "\\u") error("a low surrogate after a high one");
                    pos_ += 2;
                    const uint32_t lo = read_hex4();
                    if (lo < 0xDC00 || lo > 0xDFFF) error("a low surrogate after a high one");
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    error("no lone low surrogate");
                }
                utf8::append(out, cp);
                break;
            }
            default:
                error("a valid escape");
        }
    }
}

int64_t JsonScanner::read_int() {
    skip_ws();
    const size_t start = pos_;
    const bool negative = pos_ < s_.size() && s_[pos_] == '-';
    if (negative) ++pos_;
    int64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        v = v * 10 + (s_[pos_++] - '0');
        if (v > (int64_t{1} << 40)) error("an integer of reasonable size");
    }
    if (pos_ == start + (negative ? 1 : 0)) error("an integer");
    if (pos_ < s_.size() && (s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E'))
        error("an integer");
    return negative ? -v : v;
}

void JsonScanner::skip_string() {
    ++pos_;  // the opening quote
    for (;;) {
        const void* q = std::memchr(s_.data() + pos_, '"', s_.size() - pos_);
        if (!q) error("the end of the string");
        size_t quote = static_cast<const char*>(q) - s_.data();
        // The quote is escaped when an odd number of backslashes precede it.
        size_t backslashes = 0;
        while (quote - backslashes > pos_ && s_[quote - backslashes - 1] == '\\') ++backslashes;
        pos_ = quote + 1;
        if (backslashes % 2 == 0) return;
    }
}

std::string_view JsonScanner::skip_value() {
    const char first = peek();
    const size_t start = pos_;
    if (first == '"') {
        skip_string();
    } else if (first == '{' || first == '[') {
        int depth = 0;
        do {
            if (pos_ >= s_.size()) error("the end of an object or array");
            const char c = s_[pos_];
            if (c == '"') {
                skip_string();
                continue;
            }
            if (c == '{' || c == '[') ++depth;
            if (c == '}' || c == ']') --depth;
            ++pos_;
        } while (depth > 0);
    } else {
        while (pos_ < s_.size() && s_[pos_] != ',' && s_[pos_] != '}' && s_[pos_] != ']' &&
               s_[pos_] != ' ' && s_[pos_] != '\n' && s_[pos_] != '\r' && s_[pos_] != '\t')
            ++pos_;
        if (pos_ == start) error("a value");
    }
    return s_.substr(start, pos_ - start);
}

}  // namespace anelm
