#include "chat/jinja_printf.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chat/jinja_error.h"
#include "chat/jinja_format.h"
#include "chat/jinja_ops.h"
#include "chat/jinja_text.h"

namespace anelm::jinja {

namespace {

struct Spec {
    std::string flags;
    int width = -1;
    int precision = -1;
    char conversion = 0;
};

// Pads `s` (counted in code points) to the spec's width.
std::string pad(std::string s, const Spec& spec) {
    const size_t len = text::length(s);
    if (spec.width < 0 || len >= static_cast<size_t>(spec.width)) return s;
    const std::string fill(static_cast<size_t>(spec.width) - len, ' ');
    return spec.flags.find('-') != std::string::npos ? s + fill : fill + s;
}

std::string truncate_code_points(const std::string& s, int precision) {
    if (precision < 0) return s;
    const auto at = text::boundaries(s);
    if (static_cast<size_t>(precision) + 1 >= at.size()) return s;
    return s.substr(0, at[static_cast<size_t>(precision)]);
}

std::string c_format_float(const Spec& spec, char conversion, double value) {
    std::string f = "%";
    f += spec.flags;
    if (spec.width >= 0) f += std::to_string(std::min(spec.width, 1000));
    if (spec.precision >= 0) f.append(".").append(std::to_string(std::min(spec.precision, 1000)));
    f += conversion;
    char buf[2200];
    std::snprintf(buf, sizeof buf, f.c_str(), value);
    return buf;
}

// %d %x %o: sign, prefix and zero padding laid out as Python does.
std::string percent_integer(const Spec& spec, const Value& arg) {
    const char c = spec.conversion;
    const bool decimal = c == 'd' || c == 'i' || c == 'u';
    if (decimal ? !arg.is_number() : !arg.is_integral())
        raise("%{} format: {} is required, not {}", c, decimal ? "a real number" : "an integer",
              type_name(arg));
    const int64_t i =
        arg.is_float() ? static_cast<int64_t>(std::trunc(arg.as_float())) : arg.as_int();
    const uint64_t mag = i < 0 ? 0 - static_cast<uint64_t>(i) : static_cast<uint64_t>(i);
    std::string digits = c == 'x'   ? fmt::format("{:x}", mag)
                         : c == 'X' ? fmt::format("{:X}", mag)
                         : c == 'o' ? fmt::format("{:o}", mag)
                                    : std::to_string(mag);
    if (spec.precision > static_cast<int>(digits.size()))
        digits.insert(0, static_cast<size_t>(spec.precision) - digits.size(), '0');
    auto has = [&](char flag) { return spec.flags.find(flag) != std::string::npos; };
    std::string sign = i < 0 ? "-" : has('+') ? "+" : has(' ') ? " " : "";
    if (has('#') && !decimal) sign += c == 'o' ? "0o" : c == 'x' ? "0x" : "0X";
    const size_t len = sign.size() + digits.size();
    if (spec.width < 0 || len >= static_cast<size_t>(spec.width)) return sign + digits;
    const size_t fill = static_cast<size_t>(spec.width) - len;
    if (has('-')) return sign + digits + std::string(fill, ' ');
    if (has('0')) return sign + std::string(fill, '0') + digits;
    return std::string(fill, ' ') + sign + digits;
}

std::string percent_one(const Spec& spec, const Value& arg) {
    const char c = spec.conversion;
    switch (c) {
        case 's':
            return pad(truncate_code_points(py_str(arg), spec.precision), spec);
        case 'r':
        case 'a':
            return pad(truncate_code_points(py_repr(arg), spec.precision), spec);
        case 'd':
        case 'i':
        case 'u':
        case 'x':
        case 'X':
        case 'o':
            return percent_integer(spec, arg);
        case 'e':
        case 'E':
        case 'f':
        case 'F':
        case 'g':
        case 'G':
            if (!arg.is_number()) raise("must be real number, not {}", type_name(arg));
            return c_format_float(spec, c, arg.as_float());
        case 'c': {
            if (arg.is_integral()) {
                std::string s;
                text::append(s, static_cast<char32_t>(arg.as_int()));
                return pad(s, spec);
            }
            if (arg.is_string() && text::length(arg.as_string()) == 1)
                return pad(arg.as_string(), spec);
            raise("%c requires int or char");
        }
        default:
            raise("unsupported format character '{}'", c);
    }
}

}  // namespace

std::string percent_format(std::string_view format, const Value& args) {
    std::vector<Value> items;
    if (args.is_tuple()) {
        items = args.as_array().items;
    } else {
        items.push_back(args);
    }
    size_t next = 0;
    bool used_mapping = false;
    std::string out;
    auto read_int = [&](size_t& i) {
        int n = 0;
        while (i < format.size() && format[i] >= '0' && format[i] <= '9')
            n = std::min(n * 10 + (format[i++] - '0'), 100000);
        return n;
    };
    auto take = [&]() -> const Value& {
        if (next >= items.size()) raise("not enough arguments for format string");
        return items[next++];
    };
    for (size_t i = 0; i < format.size();) {
        if (format[i] != '%') {
            out += format[i++];
            continue;
        }
        if (++i >= format.size()) raise("incomplete format");
        if (format[i] == '%') {
            out += '%';
            ++i;
            continue;
        }
        const Value* arg = nullptr;
        if (format[i] == '(') {
            const size_t close = format.find(')', i);
            if (close == std::string_view::npos) raise("incomplete format key");
            if (args.is_undefined()) raise_undefined(args);
            if (!args.is_dict()) raise("format requires a mapping");
            const Value* v = args.as_dict().find(format.substr(i + 1, close - i - 1));
            if (!v) raise("KeyError: {}", string_repr(format.substr(i + 1, close - i - 1)));
            arg = v;
            used_mapping = true;
            i = close + 1;
        }
        Spec spec;
        while (i < format.size() &&
               std::string_view("-+ #0").find(format[i]) != std::string_view::npos)
            spec.flags += format[i++];
        if (i < format.size() && format[i] == '*') {
            ++i;
            const Value& w = take();
            if (!w.is_integral()) raise("* wants int");
            spec.width = static_cast<int>(std::clamp<int64_t>(w.as_int(), -1000, 1000));
            if (spec.width < 0) spec.flags += '-', spec.width = -spec.width;
        } else {
            if (i < format.size() && format[i] >= '0' && format[i] <= '9') spec.width = read_int(i);
        }
        if (i < format.size() && format[i] == '.') {
            ++i;
            if (i < format.size() && format[i] == '*') {
                ++i;
                const Value& p = take();
                if (!p.is_integral()) raise("* wants int");
                spec.precision = static_cast<int>(std::clamp<int64_t>(p.as_int(), 0, 1000));
            } else {
                spec.precision = read_int(i);
            }
        }
        while (i < format.size() && (format[i] == 'h' || format[i] == 'l' || format[i] == 'L')) ++i;
        if (i >= format.size()) raise("incomplete format");
        spec.conversion = format[i++];
        out += percent_one(spec, arg ? *arg : take());
        // Each conversion may pad to 100000 characters; a long format repeats them.
        if (out.size() > max_result_size) raise("result too large");
    }
    // Python takes any non-tuple, non-str argument with [] (list, dict) as a mapping,
    // which never leaves arguments unconverted.
    const bool mapping_like = args.is_dict() || args.is_list() || args.is_undefined();
    if (!used_mapping && next < items.size() && !mapping_like)
        raise("not all arguments converted during string formatting");
    return out;
}

// ---- format-spec mini-language ----

namespace {

struct FormatSpec {
    std::string fill = " ";
    char align = 0;
    char sign = '-';
    bool alternate = false;
    int width = -1;
    char grouping = 0;
    int precision = -1;
    char type = 0;
};

FormatSpec parse_spec(std::string_view spec) {
    FormatSpec f;
    size_t i = 0;
    auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
    if (!spec.empty()) {
        size_t after_fill = 0;
        text::decode(spec, after_fill);
        if (after_fill < spec.size() && is_align(spec[after_fill])) {
            f.fill = std::string(spec.substr(0, after_fill));
            f.align = spec[after_fill];
            i = after_fill + 1;
        } else if (is_align(spec[0])) {
            f.align = spec[0];
            i = 1;
        }
    }
    if (i < spec.size() && (spec[i] == '+' || spec[i] == '-' || spec[i] == ' ')) f.sign = spec[i++];
    if (i < spec.size() && spec[i] == '#') f.alternate = true, ++i;
    if (i < spec.size() && spec[i] == '0') {
        if (!f.align) f.fill.assign(1, '0'), f.align = '=';
        ++i;
    }
    auto read_int = [&]() {
        int n = 0;
        while (i < spec.size() && spec[i] >= '0' && spec[i] <= '9')
            n = std::min(n * 10 + (spec[i++] - '0'), 100000);
        return n;
    };
    if (i < spec.size() && spec[i] >= '0' && spec[i] <= '9') f.width = read_int();
    if (i < spec.size() && (spec[i] == ',' || spec[i] == '_')) f.grouping = spec[i++];
    if (i < spec.size() && spec[i] == '.') {
        ++i;
        if (i >= spec.size() || spec[i] < '0' || spec[i] > '9')
            raise("Format specifier missing precision");
        f.precision = read_int();
    }
    if (i < spec.size()) f.type = spec[i++];
    if (i != spec.size()) raise("Invalid format specifier '{}'", spec);
    return f;
}

std::string group_digits(const std::string& digits, char sep) {
    std::string out;
    const size_t n = digits.size();
    for (size_t i = 0; i < n; ++i) {
        if (i && (n - i) % 3 == 0) out += sep;
        out += digits[i];
    }
    return out;
}

// Lays out sign + body within the width, as Python aligns numbers and text.
std::string align(const FormatSpec& f, const std::string& sign, const std::string& body,
                  char default_align) {
    const size_t len = text::length(sign) + text::length(body);
    const char a = f.align ? f.align : default_align;
    if (f.width < 0 || len >= static_cast<size_t>(f.width)) return sign + body;
    const size_t padding = static_cast<size_t>(f.width) - len;
    auto fill = [&](size_t n) {
        std::string s;
        for (size_t i = 0; i < n; ++i) s += f.fill;
        return s;
    };
    switch (a) {
        case '<':
            return sign + body + fill(padding);
        case '^':
            return fill(padding / 2) + sign + body + fill(padding - padding / 2);
        case '=':
            return sign + fill(padding) + body;
        default:
            return fill(padding) + sign + body;
    }
}

std::string format_number(const Value& v, const FormatSpec& f) {
    char type = f.type;
    const bool integral =
        v.is_integral() && std::string_view("bcdoxXn").find(type) != std::string_view::npos;
    if (v.is_integral() && !type) type = 'd';
    std::string body;
    bool negative = false;
    if (integral || (v.is_integral() && type == 'd')) {
        const int64_t i = v.as_int();
        negative = i < 0;
        const uint64_t mag = negative ? 0 - static_cast<uint64_t>(i) : static_cast<uint64_t>(i);
        switch (type) {
            case 'b': {
                uint64_t m = mag;
                do body.insert(body.begin(), char('0' + (m & 1)));
                while (m >>= 1);
                if (f.alternate) body = "0b" + body;
                break;
            }
            case 'o':
                body = fmt::format("{:o}", mag);
                if (f.alternate) body = "0o" + body;
                break;
            case 'x':
                body = fmt::format("{:x}", mag);
                if (f.alternate) body = "0x" + body;
                break;
            case 'X':
                body = fmt::format("{:X}", mag);
                if (f.alternate) body = "0X" + body;
                break;
            case 'c': {
                std::string s;
                text::append(s, static_cast<char32_t>(i));
                return align(f, "", s, '<');
            }
            default:
                body = std::to_string(mag);
                break;
        }
        if (f.grouping && (type == 'd' || type == 'n')) body = group_digits(body, f.grouping);
    } else {
        if (f.precision >= 0 && type == 0) type = 'g';
        double d = v.as_float();
        negative = std::signbit(d) && !std::isnan(d);
        d = std::fabs(d);
        const int p = f.precision < 0 ? 6 : f.precision;
        switch (type) {
            case 0:
                body = float_repr(d);
                break;
            case '%':
                body = fmt::format("{:.{}f}%", d * 100, p);
                break;
            case 'e':
                body = fmt::format("{:.{}e}", d, p);
                break;
            case 'E':
                body = fmt::format("{:.{}E}", d, p);
                break;
            case 'f':
                body = fmt::format("{:.{}f}", d, p);
                break;
            case 'F':
                body = fmt::format("{:.{}F}", d, p);
                break;
            case 'g':
            case 'G': {
                char buf[1200];
                std::snprintf(buf, sizeof buf, type == 'g' ? "%.*g" : "%.*G", p, d);
                body = buf;
                break;
            }
            default:
                raise("Unknown format code '{}' for object of type '{}'", type, type_name(v));
        }
        if (f.grouping) {
            const size_t dot = std::min(body.find_first_not_of("0123456789"), body.size());
            body = group_digits(body.substr(0, dot), f.grouping) + body.substr(dot);
        }
    }
    std::string sign = negative ? "-" : (f.sign == '+' ? "+" : f.sign == ' ' ? " " : "");
    return align(f, sign, body, '>');
}

}  // namespace

std::string format_with_spec(const Value& v, std::string_view spec) {
    if (spec.empty()) return py_str(v);
    const FormatSpec f = parse_spec(spec);
    if (v.is_string()) {
        if (f.type && f.type != 's')
            raise("Unknown format code '{}' for object of type 'str'", f.type);
        if (f.sign != '-') raise("Sign not allowed in string format specifier");
        return align(f, "", truncate_code_points(v.as_string(), f.precision), '<');
    }
    if (v.is_number()) return format_number(v, f);
    raise("unsupported format string passed to {}.__format__", type_name(v));
}

}  // namespace anelm::jinja
