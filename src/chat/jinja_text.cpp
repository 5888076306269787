#include "chat/jinja_text.h"

#include <utf8proc.h>

#include <algorithm>

namespace anelm::jinja::text {

bool is_ascii(std::string_view s) {
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

size_t length(std::string_view s) {
    if (is_ascii(s)) return s.size();
    size_t n = 0;
    for (size_t i = 0; i < s.size(); ++n) decode(s, i);
    return n;
}

std::vector<size_t> boundaries(std::string_view s) {
    std::vector<size_t> out;
    out.reserve(s.size() + 1);
    for (size_t i = 0; i < s.size();) {
        out.push_back(i);
        decode(s, i);
    }
    out.push_back(s.size());
    return out;
}

static utf8proc_category_t category(char32_t c) {
    return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

bool is_space(char32_t c) {
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
           c == 0x202f || c == 0x205f || c == 0x3000;
}

bool is_alpha(char32_t c) {
    const auto cat = category(c);
    return cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO;
}

bool is_decimal(char32_t c) {
    return category(c) == UTF8PROC_CATEGORY_ND;
}

bool is_numeric(char32_t c) {
    const auto cat = category(c);
    return cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO;
}

bool is_upper(char32_t c) {
    return category(c) == UTF8PROC_CATEGORY_LU;
}
bool is_lower(char32_t c) {
    return category(c) == UTF8PROC_CATEGORY_LL;
}

bool is_cased(char32_t c) {
    const auto cat = category(c);
    return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL ||
           cat == UTF8PROC_CATEGORY_LT;
}

bool is_printable(char32_t c) {
    if (c == ' ') return true;
    switch (category(c)) {
        case UTF8PROC_CATEGORY_CC:
        case UTF8PROC_CATEGORY_CF:
        case UTF8PROC_CATEGORY_CS:
        case UTF8PROC_CATEGORY_CO:
        case UTF8PROC_CATEGORY_CN:
        case UTF8PROC_CATEGORY_ZL:
        case UTF8PROC_CATEGORY_ZP:
        case UTF8PROC_CATEGORY_ZS:
            return false;
        default:
            return true;
    }
}

char32_t to_upper(char32_t c) {
    return utf8proc_toupper(static_cast<utf8proc_int32_t>(c));
}
char32_t to_lower(char32_t c) {
    return utf8proc_tolower(static_cast<utf8proc_int32_t>(c));
}
char32_t to_title(char32_t c) {
    return utf8proc_totitle(static_cast<utf8proc_int32_t>(c));
}

// The start of the code point that ends at `end` (end > 0).
static size_t previous_start(std::string_view s, size_t end) {
    size_t i = end - 1;
    for (int k = 0; k < 3 && i > 0 && (static_cast<unsigned char>(s[i]) & 0xc0) == 0x80; ++k) --i;
    size_t j = i;
    decode(s, j);
    return j == end ? i : end - 1;  // a stray continuation byte stands alone
}

std::string strip(std::string_view s, const std::string* chars, bool left, bool right) {
    std::vector<char32_t> set;
    if (chars)
        for (size_t i = 0; i < chars->size();) set.push_back(decode(*chars, i));
    auto stripped = [&](char32_t c) {
        return chars ? std::find(set.begin(), set.end(), c) != set.end() : is_space(c);
    };
    size_t first = 0, last = s.size();  // byte range kept
    while (left && first < last) {
        size_t next = first;
        if (!stripped(decode(s, next))) break;
        first = next;
    }
    while (right && last > first) {
        const size_t start = previous_start(s, last);
        size_t i = start;
        if (!stripped(decode(s, i))) break;
        last = start;
    }
    return std::string(s.substr(first, last - first));
}

std::vector<std::string> split(std::string_view s, const std::string* sep, int64_t maxsplit) {
    std::vector<std::string> out;
    if (maxsplit < 0) maxsplit = INT64_MAX;
    if (sep) {
        size_t i = 0;
        for (; maxsplit > 0; --maxsplit) {
            const size_t pos = s.find(*sep, i);
            if (pos == std::string_view::npos) break;
            out.emplace_back(s.substr(i, pos - i));
            i = pos + sep->size();
        }
        out.emplace_back(s.substr(i));
        return out;
    }
    const std::vector<size_t> at = boundaries(s);
    const size_t n = at.size() - 1;
    auto space = [&](size_t k) {
        size_t i = at[k];
        return is_space(decode(s, i));
    };
    size_t k = 0;
    for (; maxsplit > 0; --maxsplit) {
        while (k < n && space(k)) ++k;
        if (k == n) break;
        const size_t start = k;
        while (k < n && !space(k)) ++k;
        out.emplace_back(s.substr(at[start], at[k] - at[start]));
    }
    while (k < n && space(k)) ++k;
    if (k < n) out.emplace_back(s.substr(at[k]));
    return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::string* sep, int64_t maxsplit) {
    std::vector<std::string> out;
    if (maxsplit < 0) maxsplit = INT64_MAX;
    if (sep) {
        size_t end = s.size();
        for (; maxsplit > 0 && end >= sep->size(); --maxsplit) {
            const size_t pos = s.rfind(*sep, end - sep->size());
            if (pos == std::string_view::npos) break;
            out.emplace_back(s.substr(pos + sep->size(), end - pos - sep->size()));
            end = pos;
        }
        out.emplace_back(s.substr(0, end));
        std::reverse(out.begin(), out.end());
        return out;
    }
    const std::vector<size_t> at = boundaries(s);
    auto space = [&](size_t k) {
        size_t i = at[k];
        return is_space(decode(s, i));
    };
    size_t k = at.size() - 1;  // code points [0, k) remain
    for (; maxsplit > 0; --maxsplit) {
        while (k > 0 && space(k - 1)) --k;
        if (k == 0) break;
        const size_t end = k;
        while (k > 0 && !space(k - 1)) --k;
        out.emplace_back(s.substr(at[k], at[end] - at[k]));
    }
    while (k > 0 && space(k - 1)) --k;
    if (k > 0) out.emplace_back(s.substr(0, at[k]));
    std::reverse(out.begin(), out.end());
    return out;
}

static bool is_line_break(char32_t c) {
    return c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || (c >= 0x1c && c <= 0x1e) ||
           c == 0x85 || c == 0x2028 || c == 0x2029;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t i = 0; i < s.size();) {
        const size_t at = i;
        const char32_t c = decode(s, i);
        if (!is_line_break(c)) continue;
        if (c == '\r' && i < s.size() && s[i] == '\n') ++i;
        out.emplace_back(s.substr(start, (keepends ? i : at) - start));
        start = i;
    }
    if (start < s.size()) out.emplace_back(s.substr(start));
    return out;
}

std::string replace(std::string_view s, std::string_view old, std::string_view with,
                    int64_t count) {
    if (count < 0) count = INT64_MAX;
    std::string out;
    if (old.empty()) {
        // Python inserts the replacement before every code point and at the end.
        const std::vector<size_t> at = boundaries(s);
        for (size_t k = 0; k + 1 < at.size(); ++k) {
            if (count > 0) out += with, --count;
            out += s.substr(at[k], at[k + 1] - at[k]);
        }
        if (count > 0) out += with;
        return out;
    }
    size_t i = 0;
    for (; count > 0; --count) {
        const size_t pos = s.find(old, i);
        if (pos == std::string_view::npos) break;
        out += s.substr(i, pos - i);
        out += with;
        i = pos + old.size();
    }
    out += s.substr(i);
    return out;
}

template <typename F>
static std::string map_code_points(std::string_view s, F f) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) append(out, f(decode(s, i)));
    return out;
}

std::string upper(std::string_view s) {
    return map_code_points(s, to_upper);
}
std::string lower(std::string_view s) {
    return map_code_points(s, to_lower);
}

std::string swapcase(std::string_view s) {
    return map_code_points(s, [](char32_t c) {
        if (is_upper(c)) return to_lower(c);
        if (is_lower(c)) return to_upper(c);
        return c;
    });
}

std::string title(std::string_view s) {
    bool previous_cased = false;
    return map_code_points(s, [&](char32_t c) {
        const char32_t mapped = previous_cased ? to_lower(c) : to_title(c);
        previous_cased = is_cased(c);
        return mapped;
    });
}

std::string capitalize(std::string_view s) {
    bool first = true;
    return map_code_points(s, [&](char32_t c) {
        const char32_t mapped = first ? to_title(c) : to_lower(c);
        first = false;
        return mapped;
    });
}

}  // namespace anelm::jinja::text
