// UTF-8 one code point at a time, for text that may be ill-formed.
#pragma once

#include <string>
#include <string_view>

namespace anelm::code_point {

// Decodes the code point at s[i] and advances i past it. A byte that starts no
// valid sequence decodes as itself, so nothing is lost or refused.
char32_t decode(std::string_view s, size_t& i);
void append(std::string& out, char32_t c);

}  // namespace anelm::code_point
