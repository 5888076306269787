// The inside of a JSON string, byte by byte: valid UTF-8, no raw control
// characters, escapes with \u surrogate pairs whole (nlohmann::json refuses a
// lone surrogate). Shared by the matcher and the token filter's cache.
#pragma once

#include <cstdint>

namespace anelm::grammar::json_string {

// Where a string's inside is between two bytes; normal is between characters.
enum State : uint8_t {
    normal,
    escape,     // after '\'
    hex1,       // \u, four hex digits to go
    hex2,       // three to go
    hex2_d,     // three to go after 'D': the next decides on a surrogate
    hex3,       // two to go
    hex4,       // one to go
    high3,      // in a high surrogate, two to go
    high4,      // one to go
    low_slash,  // a low surrogate must follow: '\'
    low_u,      // 'u'
    low1,       // 'D'
    low2,       // C-F
    low3,       // two hex digits to go
    low4,       // one to go
    cont1,      // one UTF-8 continuation byte to go
    cont2,      // two to go
    cont2_e0,   // two to go, the first A0-BF
    cont2_ed,   // two to go, the first 80-9F (no surrogates)
    cont3,      // three to go
    cont3_f0,   // three to go, the first 90-BF
    cont3_f4,   // three to go, the first 80-8F (at most U+10FFFF)
    n_states
};

inline constexpr int8_t reject = -1;
inline constexpr int8_t close = -2;  // an unescaped '"' in state normal

// The state after byte, or reject or close. Any other byte in state normal starts
// a character: counting those counts characters (a surrogate pair is one), and a
// length limit is checked before a character starts, never in the middle of one.
int8_t step(State state, uint8_t byte);

}  // namespace anelm::grammar::json_string
