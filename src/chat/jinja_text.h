// UTF-8 text and the Python str algorithms templates call (strip, split,
// replace, case mapping). Indices are in code points, as in Python.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/code_point.h"

namespace anelm::jinja::text {

using code_point::append;
using code_point::decode;

bool is_ascii(std::string_view s);
size_t length(std::string_view s);
// Byte offsets of every code point, then s.size().
std::vector<size_t> boundaries(std::string_view s);

// Python's str.isspace for one code point (Unicode whitespace, \x1c-\x1f included).
bool is_space(char32_t c);
bool is_alpha(char32_t c);
bool is_decimal(char32_t c);
bool is_numeric(char32_t c);
bool is_upper(char32_t c);
bool is_lower(char32_t c);
bool is_cased(char32_t c);
bool is_printable(char32_t c);  // Python's str.isprintable, used by repr
char32_t to_upper(char32_t c);
char32_t to_lower(char32_t c);
char32_t to_title(char32_t c);

// str.strip / lstrip / rstrip; `chars` null means whitespace.
std::string strip(std::string_view s, const std::string* chars, bool left, bool right);
// str.split / rsplit; `sep` null means runs of whitespace. maxsplit < 0: no limit.
std::vector<std::string> split(std::string_view s, const std::string* sep, int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::string* sep, int64_t maxsplit);
std::vector<std::string> splitlines(std::string_view s, bool keepends);
// str.replace; count < 0: all.
std::string replace(std::string_view s, std::string_view old, std::string_view with, int64_t count);

std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string swapcase(std::string_view s);
std::string title(std::string_view s);       // Python's str.title
std::string capitalize(std::string_view s);  // Python's str.capitalize

}  // namespace anelm::jinja::text
