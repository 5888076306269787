// UTF-8 helpers shared by the tokenizers: validation, lossy repair in the way
// Rust's String::from_utf8_lossy and JavaScript's TextDecoder do it (one U+FFFD
// per maximal invalid subpart), and detection of a character cut off at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/code_point.h"

namespace anelm::utf8 {

inline constexpr std::string_view replacement = "\xEF\xBF\xBD";  // U+FFFD

struct Step {
    size_t length;   // bytes consumed: a whole character, or a maximal invalid subpart (>= 1)
    bool valid;      // a whole, well-formed character
    bool truncated;  // invalid only because the text ended inside the character
};

// Reads the character (or invalid subpart) that starts at s[i], i < s.size().
Step step(std::string_view s, size_t i);

// Decodes the well-formed character at s[i] and advances i past it.
uint32_t decode(std::string_view s, size_t& i);

using code_point::append;

// Byte offset of the first ill-formed byte, or npos when s is well-formed.
size_t find_invalid(std::string_view s);

// s with every maximal invalid subpart replaced by U+FFFD. With keep_truncated_tail,
// a character cut off by the end of s is kept as raw bytes (for streaming).
std::string repair(std::string_view s, bool keep_truncated_tail = false);

// Number of bytes at the end of s that start a character the text ends inside of.
size_t truncated_tail(std::string_view s);

}  // namespace anelm::utf8
