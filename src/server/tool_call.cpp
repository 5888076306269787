#include "server/tool_call.h"

#include <cctype>

namespace anelm::server {

namespace {

using ojson = nlohmann::ordered_json;

bool is_space(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

// A JSON string at pos (the opening quote); its text, decoded, into out.
Scan read_json_string(std::string_view t, size_t& pos, std::string* out) {
    if (pos >= t.size()) return Scan::more;
    if (t[pos] != '"') return Scan::bad;
    for (size_t i = pos + 1; i < t.size(); ++i) {
        if (t[i] == '\\') {
            ++i;
            continue;
        }
        if (t[i] != '"') continue;
        if (out) {
            const ojson s = ojson::parse(t.substr(pos, i + 1 - pos), nullptr, false);
            if (!s.is_string()) return Scan::bad;
            *out = s.get<std::string>();
        }
        pos = i + 1;
        return Scan::done;
    }
    return Scan::more;
}

// A string quoted by `quote` with Python's escapes.
Scan read_quoted(std::string_view t, size_t& pos, char quote, std::string& out) {
    out.clear();
    for (size_t i = pos + 1; i < t.size(); ++i) {
        const char c = t[i];
        if (c == quote) {
            pos = i + 1;
            return Scan::done;
        }
        if (c != '\\') {
            out += c;
            continue;
        }
        if (++i >= t.size()) return Scan::more;
        switch (t[i]) {
            case 'n':
                out += '\n';
                break;
            case 't':
                out += '\t';
                break;
            case 'r':
                out += '\r';
                break;
            case 'u': {
                if (i + 4 >= t.size()) return Scan::more;
                const ojson s =
                    ojson::parse("\"\\u" + std::string(t.substr(i + 1, 4)) + "\"", nullptr, false);
                if (!s.is_string()) return Scan::bad;
                out += s.get<std::string>();
                i += 4;
                break;
            }
            default:
                out += t[i];
        }
    }
    return Scan::more;
}

// A number or bare word (true, None, ...) as JSON; the text ends it only when
// something follows it.
Scan read_word(std::string_view t, size_t& pos, ojson& out) {
    size_t end = pos;
    while (end < t.size() && (std::isalnum(static_cast<unsigned char>(t[end])) || t[end] == '-' ||
                              t[end] == '+' || t[end] == '.' || t[end] == '_'))
        ++end;
    if (end == t.size()) return Scan::more;
    const std::string word(t.substr(pos, end - pos));
    if (word == "True" || word == "true")
        out = true;
    else if (word == "False" || word == "false")
        out = false;
    else if (word == "None" || word == "null")
        out = nullptr;
    else {
        out = ojson::parse(word, nullptr, false);
        if (!out.is_number()) return Scan::bad;
    }
    pos = end;
    return Scan::done;
}

// An object key: quoted, or a bare word up to the colon.
Scan read_key(std::string_view t, size_t& pos, std::string& key) {
    if (pos >= t.size()) return Scan::more;
    ojson k;
    if (t[pos] == '"' || t[pos] == '\'' || t.substr(pos, 1) == "<") {
        const Scan s = read_loose_value(t, pos, k);
        if (s != Scan::done) return s;
        if (!k.is_string()) return Scan::bad;
        key = k.get<std::string>();
        return Scan::done;
    }
    size_t end = pos;
    while (end < t.size() && t[end] != ':' && !is_space(t[end])) ++end;
    if (end == t.size()) return Scan::more;
    if (end == pos) return Scan::bad;
    key = std::string(t.substr(pos, end - pos));
    pos = end;
    return Scan::done;
}

// The items of an object or array up to `close`, each read by item().
template <typename Item>
Scan read_items(std::string_view t, size_t& pos, char close, Item item) {
    ++pos;
    skip_space(t, pos);
    if (pos >= t.size()) return Scan::more;
    if (t[pos] == close) {
        ++pos;
        return Scan::done;
    }
    while (true) {
        if (const Scan s = item(); s != Scan::done) return s;
        skip_space(t, pos);
        if (pos >= t.size()) return Scan::more;
        if (t[pos] == close) {
            ++pos;
            return Scan::done;
        }
        if (t[pos] != ',') return Scan::bad;
        ++pos;
        skip_space(t, pos);
    }
}

}  // namespace

void skip_space(std::string_view t, size_t& pos) {
    while (pos < t.size() && is_space(t[pos])) ++pos;
}

Scan expect(std::string_view t, size_t& pos, std::string_view lit) {
    const std::string_view rest = t.substr(std::min(pos, t.size()));
    if (rest.substr(0, lit.size()) == lit) {
        pos += lit.size();
        return Scan::done;
    }
    return lit.substr(0, rest.size()) == rest ? Scan::more : Scan::bad;
}

Scan read_until(std::string_view t, size_t& pos, std::string_view end, std::string& out) {
    const size_t at = t.find(end, pos);
    if (at == std::string_view::npos) return Scan::more;
    out = std::string(t.substr(pos, at - pos));
    pos = at + end.size();
    return Scan::done;
}

Scan skip_json_value(std::string_view t, size_t& pos) {
    skip_space(t, pos);
    if (pos >= t.size()) return Scan::more;
    if (t[pos] == '"') return read_json_string(t, pos, nullptr);
    if (t[pos] != '{' && t[pos] != '[') {
        ojson word;
        return read_word(t, pos, word);
    }
    int depth = 0;
    for (size_t i = pos; i < t.size(); ++i) {
        const char c = t[i];
        if (c == '"') {
            size_t at = i;
            if (const Scan s = read_json_string(t, at, nullptr); s != Scan::done) return s;
            i = at - 1;
        } else if (c == '{' || c == '[') {
            ++depth;
        } else if (c == '}' || c == ']') {
            if (--depth == 0) {
                pos = i + 1;
                return Scan::done;
            }
        }
    }
    return Scan::more;
}

Scan read_json_call(std::string_view t, size_t& pos, ToolCall& call) {
    skip_space(t, pos);
    if (pos >= t.size()) return Scan::more;
    if (t[pos] != '{') return Scan::bad;
    return read_items(t, pos, '}', [&] {
        std::string key;
        if (const Scan s = read_json_string(t, pos, &key); s != Scan::done) return s;
        skip_space(t, pos);
        if (const Scan s = expect(t, pos, ":"); s != Scan::done) return s;
        skip_space(t, pos);
        const size_t start = pos;
        if (key == "name") {
            std::string name;
            if (const Scan s = read_json_string(t, pos, &name); s != Scan::done) return s;
            call.name = name;
            return Scan::done;
        }
        const Scan s = skip_json_value(t, pos);
        if (key == "arguments" || key == "parameters")
            call.arguments =
                std::string(t.substr(start, (s == Scan::done ? pos : t.size()) - start));
        return s;
    });
}

Scan read_loose_value(std::string_view t, size_t& pos, ojson& out) {
    skip_space(t, pos);
    if (pos >= t.size()) return Scan::more;
    const char c = t[pos];
    if (c == '<') {
        static constexpr std::string_view mark = "<|\"|>";
        if (const Scan s = expect(t, pos, mark); s != Scan::done) return s;
        std::string text;
        if (const Scan s = read_until(t, pos, mark, text); s != Scan::done) return s;
        out = text;
        return Scan::done;
    }
    if (c == '"' || c == '\'') {
        std::string text;
        if (const Scan s = read_quoted(t, pos, c, text); s != Scan::done) return s;
        out = text;
        return Scan::done;
    }
    if (c == '{') {
        out = ojson::object();
        return read_items(t, pos, '}', [&] {
            std::string key;
            if (const Scan s = read_key(t, pos, key); s != Scan::done) return s;
            skip_space(t, pos);
            if (const Scan s = expect(t, pos, ":"); s != Scan::done) return s;
            return read_loose_value(t, pos, out[key]);
        });
    }
    if (c == '[' || c == '(') {
        out = ojson::array();
        return read_items(t, pos, c == '[' ? ']' : ')', [&] {
            ojson item;
            const Scan s = read_loose_value(t, pos, item);
            if (s == Scan::done) out.push_back(std::move(item));
            return s;
        });
    }
    return read_word(t, pos, out);
}

void ArgumentsText::add(const std::string& key, const ojson& value) {
    if (text_.size() > 1) text_ += ", ";
    const auto json = [](const ojson& v) {
        return v.dump(-1, ' ', false, ojson::error_handler_t::replace);
    };
    text_ += json(ojson(key)) + ": " + json(value);
}

nlohmann::json arguments_object(const std::string& arguments) {
    nlohmann::json input = nlohmann::json::parse(arguments, nullptr, false);
    return input.is_object() ? input : nlohmann::json::object();
}

}  // namespace anelm::server
