#include "tokenizer/byte_level.h"

#include <array>
#include <string>

#include "tokenizer/utf8.h"

namespace anelm::byte_level {

namespace {

// Printable Latin-1 bytes stand for themselves; the other 68 take U+0100,
// U+0101, ... in byte order.
struct Tables {
    std::array<std::string, 256> chars;
    std::array<int16_t, 0x144> bytes;
    Tables() {
        bytes.fill(-1);
        uint32_t next = 0x100;
        for (int b = 0; b < 256; ++b) {
            const bool printable =
                (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            const uint32_t cp = printable ? b : next++;
            utf8::append(chars[b], cp);
            bytes[cp] = static_cast<int16_t>(b);
        }
    }
};

const Tables& tables() {
    static const Tables t;
    return t;
}

}  // namespace

std::string_view char_of(uint8_t b) {
    return tables().chars[b];
}

int byte_of(uint32_t cp) {
    return cp < 0x144 ? tables().bytes[cp] : -1;
}

}  // namespace anelm::byte_level
