#include "base/code_point.h"

namespace anelm::code_point {

char32_t decode(std::string_view s, size_t& i) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    int len = 0;
    char32_t c = 0;
    if (b0 < 0x80) {
        ++i;
        return b0;
    } else if ((b0 & 0xe0) == 0xc0 && b0 >= 0xc2) {
        len = 2, c = b0 & 0x1f;
    } else if ((b0 & 0xf0) == 0xe0) {
        len = 3, c = b0 & 0x0f;
    } else if ((b0 & 0xf8) == 0xf0 && b0 <= 0xf4) {
        len = 4, c = b0 & 0x07;
    } else {
        ++i;
        return b0;
    }
    if (i + len > s.size()) {
        ++i;
        return b0;
    }
    for (int k = 1; k < len; ++k) {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xc0) != 0x80) {
            ++i;
            return b0;
        }
        c = (c << 6) | (b & 0x3f);
    }
    const bool overlong = (len == 3 && c < 0x800) || (len == 4 && c < 0x10000);
    if (overlong || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
        ++i;
        return b0;
    }
    i += len;
    return c;
}

void append(std::string& out, char32_t c) {
    if (c < 0x80) {
        out += static_cast<char>(c);
    } else if (c < 0x800) {
        out += static_cast<char>(0xc0 | (c >> 6));
        out += static_cast<char>(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
        out += static_cast<char>(0xe0 | (c >> 12));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (c & 0x3f));
    } else {
        out += static_cast<char>(0xf0 | (c >> 18));
        out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (c & 0x3f));
    }
}

}  // namespace anelm::code_point
