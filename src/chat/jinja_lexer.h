// Splits template source into tokens, applying Jinja2's whitespace control as
// transformers configures it: trim_blocks and lstrip_blocks on,
// keep_trailing_newline off, and `-` / `+` on tags.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace anelm::jinja {

enum class TokenType {
    data,
    variable_begin,
    variable_end,
    block_begin,
    block_end,
    name,
    string,
    integer,
    floating,
    op,
    eof
};

struct Token {
    TokenType type = TokenType::eof;
    std::string value;  // text, name, unescaped string or operator
    int64_t int_value = 0;
    double float_value = 0;
    int line = 1;
};

// Raises Failure (with the line) for malformed source.
std::vector<Token> tokenize(std::string_view source);

}  // namespace anelm::jinja
