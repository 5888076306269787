// GPT-2's byte-to-character table used by byte-level BPE: every byte stands for
// one printable character, so token strings never hold raw bytes or spaces.
#pragma once

#include <cstdint>
#include <string_view>

namespace anelm::byte_level {

// UTF-8 of the character that stands for byte b.
std::string_view char_of(uint8_t b);

// The byte that code point cp stands for, or -1 when it stands for none.
int byte_of(uint32_t cp);

}  // namespace anelm::byte_level
