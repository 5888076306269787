#include "chat/jinja_format.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <utility>

#include "chat/jinja_text.h"

namespace anelm::jinja {

// The shortest digits that read back as |d| and the decimal exponent of the
// first one (d = 0.d1d2... * 10^(exp + 1)), from fmt's shortest round-trip form,
// which may come as "123.45", "1e+16" or "1.5e-07".
static std::pair<std::string, int> shortest_digits(double d) {
    const std::string s = fmt::format("{}", std::fabs(d));
    const size_t e_at = s.find('e');
    const std::string mantissa = s.substr(0, e_at);
    int exp = e_at == std::string::npos ? 0 : std::atoi(s.c_str() + e_at + 1);
    const size_t dot = mantissa.find('.');
    std::string digits;
    for (char c : mantissa)
        if (c != '.') digits += c;
    int point = static_cast<int>(dot == std::string::npos ? mantissa.size() : dot);
    const size_t first = digits.find_first_not_of('0');
    if (first == std::string::npos) return {"0", 0};
    point -= static_cast<int>(first);
    digits = digits.substr(first, digits.find_last_not_of('0') - first + 1);
    return {digits, point + exp - 1};
}

std::string float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    const auto [digits, exp] = shortest_digits(d);
    std::string out = std::signbit(d) ? "-" : "";
    if (exp < -4 || exp >= 16) {
        out += digits[0];
        if (digits.size() > 1) out.append(".").append(digits, 1);
        out += fmt::format("e{}{:02d}", exp < 0 ? '-' : '+', std::abs(exp));
    } else if (exp >= 0) {
        const size_t int_len = static_cast<size_t>(exp) + 1;
        if (digits.size() <= int_len) {
            out += digits + std::string(int_len - digits.size(), '0') + ".0";
        } else {
            out.append(digits, 0, int_len).append(".").append(digits, int_len);
        }
    } else {
        out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    }
    return out;
}

std::string string_repr(std::string_view s) {
    const bool has_single = s.find('\'') != std::string_view::npos;
    const bool has_double = s.find('"') != std::string_view::npos;
    const char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    for (size_t i = 0; i < s.size();) {
        const char32_t c = text::decode(s, i);
        if (c == static_cast<char32_t>(quote) || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c < 0x20 || c == 0x7f) {
            out += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
        } else if (c < 0x7f || text::is_printable(c)) {
            text::append(out, c);
        } else if (c <= 0xff) {
            out += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
        } else if (c <= 0xffff) {
            out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        } else {
            out += fmt::format("\\U{:08x}", static_cast<unsigned>(c));
        }
    }
    out += quote;
    return out;
}

static std::string sequence_repr(const Array& a) {
    std::string out(1, a.is_tuple ? '(' : '[');
    for (size_t i = 0; i < a.items.size(); ++i) {
        if (i) out += ", ";
        out += py_repr(a.items[i]);
    }
    if (a.is_tuple && a.items.size() == 1) out += ',';
    out += a.is_tuple ? ')' : ']';
    return out;
}

static std::string dict_repr(const Dict& d) {
    std::string out = "{";
    for (size_t i = 0; i < d.entries.size(); ++i) {
        if (i) out += ", ";
        out += py_repr(d.entries[i].first) + ": " + py_repr(d.entries[i].second);
    }
    return out + "}";
}

std::string py_repr(const Value& v) {
    switch (v.kind()) {
        case Kind::undefined:
            return "Undefined";
        case Kind::string:
            return string_repr(v.as_string());
        case Kind::array:
            return sequence_repr(v.as_array());
        case Kind::dict:
            return dict_repr(v.as_dict());
        default:
            return py_str(v);
    }
}

std::string py_str(const Value& v) {
    switch (v.kind()) {
        case Kind::undefined:
            return "";
        case Kind::none:
            return "None";
        case Kind::boolean:
            return v.as_bool() ? "True" : "False";
        case Kind::integer:
            return std::to_string(v.as_int());
        case Kind::floating:
            return float_repr(v.as_float());
        case Kind::string:
            return v.as_string();
        case Kind::array:
        case Kind::dict:
            return py_repr(v);
        case Kind::object:
            return v.as_object().repr();
    }
    return "";
}

}  // namespace anelm::jinja
