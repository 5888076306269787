#include "chat/jinja_lexer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "chat/jinja_error.h"
#include "chat/jinja_format.h"
#include "chat/jinja_text.h"

namespace anelm::jinja {
namespace {

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_name_char(char c) {
    return is_name_start(c) || is_digit(c);
}

// Jinja2 reads the whole source with "\r\n" and "\r" as "\n" and drops one
// final newline (keep_trailing_newline is off).
std::string normalise(std::string_view source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

bool all_space(std::string_view s) {
    for (size_t i = 0; i < s.size();)
        if (!text::is_space(text::decode(s, i))) return false;
    return true;
}

std::string rstrip_space(std::string_view s) {
    return text::strip(s, nullptr, false, true);
}

// The value of a Python string literal's body.
std::string unescape(std::string_view body, int line) {
    std::string out;
    auto hex = [&](size_t at, int count) -> char32_t {
        if (at + count > body.size())
            raise_at(line,
                     "(unicode error) 'unicodeescape' codec can't decode bytes: truncated escape");
        char32_t v = 0;
        for (int k = 0; k < count; ++k) {
            const char c = body[at + k];
            int d = is_digit(c)              ? c - '0'
                    : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                    : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                             : -1;
            if (d < 0)
                raise_at(
                    line,
                    "(unicode error) 'unicodeescape' codec can't decode bytes: truncated escape");
            v = v * 16 + d;
        }
        return v;
    };
    for (size_t i = 0; i < body.size(); ++i) {
        if (body[i] != '\\' || i + 1 >= body.size()) {
            out += body[i];
            continue;
        }
        const char c = body[++i];
        switch (c) {
            case '\n':
                break;
            case '\\':
                out += '\\';
                break;
            case '\'':
                out += '\'';
                break;
            case '"':
                out += '"';
                break;
            case 'a':
                out += '\a';
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
            case 'v':
                out += '\v';
                break;
            case 'x':
                text::append(out, hex(i + 1, 2)), i += 2;
                break;
            case 'u':
                text::append(out, hex(i + 1, 4)), i += 4;
                break;
            case 'U': {
                const char32_t v = hex(i + 1, 8);
                if (v > 0x10ffff) raise_at(line, "(unicode error) illegal Unicode character");
                text::append(out, v);
                i += 8;
                break;
            }
            case 'N':
                raise_at(line, "\\N{{...}} escapes are not supported");
            default:
                if (c >= '0' && c <= '7') {
                    char32_t v = 0;
                    int n = 0;
                    for (; n < 3 && i < body.size() && body[i] >= '0' && body[i] <= '7'; ++n, ++i)
                        v = v * 8 + (body[i] - '0');
                    --i;
                    text::append(out, v);
                } else {
                    out += '\\';
                    out += c;
                }
        }
    }
    return out;
}

class Lexer {
public:
    explicit Lexer(std::string_view source) : src_(normalise(source)) {}

    std::vector<Token> run() {
        const size_t n = src_.size();
        while (pos_ < n) {
            const size_t p = find_tag(pos_);
            if (p == std::string::npos) {
                emit(TokenType::data, src_.substr(pos_), line_);
                advance_to(n);
                break;
            }
            const char kind = src_[p + 1];
            const char sign =
                p + 2 < n && (src_[p + 2] == '-' || src_[p + 2] == '+') ? src_[p + 2] : 0;
            const size_t raw_body = kind == '%' ? match_raw_begin(p) : 0;
            std::string text = strip_before(src_.substr(pos_, p - pos_), sign, kind != '{');
            if (!text.empty()) emit(TokenType::data, std::move(text), line_);
            advance_to(p);
            if (raw_body) {
                lex_raw(raw_body);
                continue;
            }
            pos_ = p + 2 + (sign ? 1 : 0);
            if (kind == '#') {
                lex_comment();
            } else {
                lex_tag(kind == '{');
            }
        }
        emit(TokenType::eof, "", line_);
        return std::move(tokens_);
    }

private:
    std::string src_;
    size_t pos_ = 0;
    int line_ = 1;
    bool line_starting_ = true;  // the last match ended with a newline
    std::vector<Token> tokens_;
    std::string balance_;  // closing brackets expected inside a tag

    Token& emit(TokenType type, std::string value, int line) {
        Token& t = tokens_.emplace_back();
        t.type = type;
        t.value = std::move(value);
        t.line = line;
        return t;
    }

    void advance_to(size_t p) {
        line_ += static_cast<int>(std::count(src_.begin() + pos_, src_.begin() + p, '\n'));
        pos_ = p;
    }

    // Ends a tag's match at `end` and remembers whether it ended a line.
    void finish_match(size_t end) {
        line_starting_ = end > 0 && src_[end - 1] == '\n';
        advance_to(end);
    }

    size_t find_tag(size_t from) const {
        for (size_t p = src_.find('{', from); p != std::string::npos; p = src_.find('{', p + 1))
            if (p + 1 < src_.size() &&
                (src_[p + 1] == '{' || src_[p + 1] == '%' || src_[p + 1] == '#'))
                return p;
        return std::string::npos;
    }

    size_t skip_space(size_t i) const {
        while (i < src_.size()) {
            size_t j = i;
            if (!text::is_space(text::decode(src_, j))) break;
            i = j;
        }
        return i;
    }

    bool at(size_t i, std::string_view s) const { return src_.compare(i, s.size(), s) == 0; }

    // Text before a tag: `-` strips all whitespace; lstrip_blocks strips the
    // spaces and tabs from the line start before a block or comment tag.
    std::string strip_before(std::string_view text, char sign, bool lstrip_allowed) const {
        if (sign == '-') return rstrip_space(text);
        if (sign != '+' && lstrip_allowed) {
            const size_t nl = text.rfind('\n');
            const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
            const std::string_view tail = text.substr(l_pos);
            if ((l_pos > 0 || line_starting_) && !tail.empty() && all_space(tail))
                return std::string(text.substr(0, l_pos));
        }
        return std::string(text);
    }

    void lex_comment() {
        const size_t q = src_.find("#}", pos_);
        if (q == std::string::npos) raise_at(line_, "Missing end of comment tag");
        size_t end = q + 2;
        if (q > pos_ && src_[q - 1] == '-') {
            end = skip_space(end);
        } else if (!(q > pos_ && src_[q - 1] == '+') && end < src_.size() && src_[end] == '\n') {
            ++end;  // trim_blocks
        }
        finish_match(end);
    }

    // `{%[-+]? raw [-]?%}` at p: the offset where the raw text starts, else 0.
    size_t match_raw_begin(size_t p) const {
        size_t i = p + 2;
        if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
        i = skip_space(i);
        if (!at(i, "raw")) return 0;
        i = skip_space(i + 3);
        if (at(i, "-%}")) return skip_space(i + 3);
        if (at(i, "%}")) return i + 2;
        return 0;
    }

    void lex_raw(size_t body) {
        finish_match(body);
        for (size_t q = src_.find("{%", pos_); q != std::string::npos; q = src_.find("{%", q + 1)) {
            size_t i = q + 2;
            const char sign = i < src_.size() && (src_[i] == '-' || src_[i] == '+') ? src_[i] : 0;
            if (sign) ++i;
            i = skip_space(i);
            if (!at(i, "endraw")) continue;
            i = skip_space(i + 6);
            size_t end = 0;
            if (at(i, "+%}")) {
                end = i + 3;
            } else if (at(i, "-%}")) {
                end = skip_space(i + 3);
            } else if (at(i, "%}")) {
                end = i + 2;
                if (end < src_.size() && src_[end] == '\n') ++end;
            } else {
                continue;
            }
            std::string text =
                strip_before(std::string_view(src_).substr(pos_, q - pos_), sign, true);
            if (!text.empty()) emit(TokenType::data, std::move(text), line_);
            finish_match(end);
            return;
        }
        raise_at(line_, "Missing end of raw directive");
    }

    // Consumes the tag's end at pos_ if there is one.
    bool lex_tag_end(bool variable) {
        if (!balance_.empty()) return false;
        size_t end = 0;
        if (variable) {
            if (at(pos_, "-}}")) {
                end = skip_space(pos_ + 3);
            } else if (at(pos_, "}}")) {
                end = pos_ + 2;
            }
        } else if (at(pos_, "+%}")) {
            end = pos_ + 3;
        } else if (at(pos_, "-%}")) {
            end = skip_space(pos_ + 3);
        } else if (at(pos_, "%}")) {
            end = pos_ + 2;
            if (end < src_.size() && src_[end] == '\n') ++end;  // trim_blocks
        }
        if (!end) return false;
        emit(variable ? TokenType::variable_end : TokenType::block_end, "", line_);
        finish_match(end);
        return true;
    }

    void lex_tag(bool variable) {
        emit(variable ? TokenType::variable_begin : TokenType::block_begin, "", line_);
        balance_.clear();
        while (pos_ < src_.size()) {
            if (lex_tag_end(variable)) return;
            const size_t after_space = skip_space(pos_);
            if (after_space != pos_) {
                advance_to(after_space);
                continue;
            }
            if (lex_number() || lex_name() || lex_string()) continue;
            lex_operator();
        }
    }

    // (\d+_)*\d+ at i: its end, or npos.
    size_t digits(size_t i) const {
        if (i >= src_.size() || !is_digit(src_[i])) return std::string::npos;
        while (true) {
            while (i < src_.size() && is_digit(src_[i])) ++i;
            if (i + 1 < src_.size() && src_[i] == '_' && is_digit(src_[i + 1])) {
                ++i;
                continue;
            }
            return i;
        }
    }

    bool lex_number() {
        const size_t start = pos_;
        const size_t int_end = digits(start);
        if (int_end == std::string::npos) return false;
        auto clean = [&](size_t end) {
            std::string s(src_.substr(start, end - start));
            s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
            return s;
        };
        if (start == 0 || src_[start - 1] != '.') {
            size_t frac_end = std::string::npos;
            if (int_end < src_.size() && src_[int_end] == '.') frac_end = digits(int_end + 1);
            size_t e = frac_end != std::string::npos ? frac_end : int_end;
            size_t exp_end = std::string::npos;
            if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
                ++e;
                if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
                exp_end = digits(e);
            }
            if (exp_end == std::string::npos && frac_end != std::string::npos) exp_end = frac_end;
            if (exp_end != std::string::npos) {
                Token& t = emit(TokenType::floating, "", line_);
                t.float_value = std::strtod(clean(exp_end).c_str(), nullptr);
                advance_to(exp_end);
                return true;
            }
        }
        // Integers: 0b / 0o / 0x prefixes, or decimal without leading zeros.
        size_t end = start + 1;
        int base = 10;
        const char c1 = start + 1 < src_.size() ? src_[start + 1] | 0x20 : 0;
        auto valid = [&](char c) {
            c |= 0x20;
            return base == 2   ? (c == '0' || c == '1')
                   : base == 8 ? (c >= '0' && c <= '7')
                               : (is_digit(c) || (c >= 'a' && c <= 'f'));
        };
        if (src_[start] == '0' && (c1 == 'b' || c1 == 'o' || c1 == 'x')) {
            base = c1 == 'b' ? 2 : c1 == 'o' ? 8 : 16;
            size_t i = start + 2;
            while (i < src_.size()) {
                if (valid(src_[i])) {
                    ++i;
                } else if (src_[i] == '_' && i + 1 < src_.size() && valid(src_[i + 1])) {
                    i += 2;
                } else {
                    break;
                }
            }
            if (i > start + 2) {
                end = i;
            } else {
                base = 10;
            }
        }
        if (base == 10) {
            const bool zero = src_[start] == '0';
            end = start + 1;
            while (end < src_.size()) {
                const size_t d = end < src_.size() && src_[end] == '_' ? end + 1 : end;
                if (d < src_.size() && (zero ? src_[d] == '0' : is_digit(src_[d]))) {
                    end = d + 1;
                } else {
                    break;
                }
            }
        }
        std::string digits_only = clean(end);
        if (base != 10) digits_only = digits_only.substr(2);
        errno = 0;
        char* stop = nullptr;
        const long long v = std::strtoll(digits_only.c_str(), &stop, base);
        if (errno == ERANGE) raise_at(line_, "integer literal too large");
        Token& t = emit(TokenType::integer, "", line_);
        t.int_value = v;
        advance_to(end);
        return true;
    }

    bool lex_name() {
        if (!is_name_start(src_[pos_])) return false;
        size_t end = pos_ + 1;
        while (end < src_.size() && is_name_char(src_[end])) ++end;
        emit(TokenType::name, src_.substr(pos_, end - pos_), line_);
        advance_to(end);
        return true;
    }

    bool lex_string() {
        const char quote = src_[pos_];
        if (quote != '\'' && quote != '"') return false;
        size_t i = pos_ + 1;
        while (i < src_.size() && src_[i] != quote) i += src_[i] == '\\' ? 2 : 1;
        if (i >= src_.size())
            raise_at(line_, "unexpected char {} at {}", string_repr(std::string(1, quote)), pos_);
        const int line = line_;
        emit(TokenType::string,
             unescape(std::string_view(src_).substr(pos_ + 1, i - pos_ - 1), line), line);
        advance_to(i + 1);
        return true;
    }

    void lex_operator() {
        static constexpr std::string_view two[] = {"//", "**", "==", "!=", ">=", "<="};
        static constexpr std::string_view one = "+-/*%~[](){}><=.:|,;";
        for (std::string_view op : two) {
            if (at(pos_, op)) {
                emit(TokenType::op, std::string(op), line_);
                advance_to(pos_ + 2);
                return;
            }
        }
        const char c = src_[pos_];
        if (one.find(c) == std::string_view::npos) {
            size_t i = pos_;
            const char32_t cp = text::decode(src_, i);
            std::string ch;
            text::append(ch, cp);
            raise_at(line_, "unexpected char {} at {}", string_repr(ch), pos_);
        }
        if (c == '(' || c == '[' || c == '{') {
            balance_ += c == '(' ? ')' : c == '[' ? ']' : '}';
        } else if (c == ')' || c == ']' || c == '}') {
            if (balance_.empty()) raise_at(line_, "unexpected '{}'", c);
            if (balance_.back() != c)
                raise_at(line_, "unexpected '{}', expected '{}'", c, balance_.back());
            balance_.pop_back();
        }
        emit(TokenType::op, std::string(1, c), line_);
        advance_to(pos_ + 1);
    }
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) {
    return Lexer(source).run();
}

}  // namespace anelm::jinja
