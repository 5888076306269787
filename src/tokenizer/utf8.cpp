#include "tokenizer/utf8.h"

namespace anelm::utf8 {

Step step(std::string_view s, size_t i) {
    auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
    const uint8_t b0 = byte(i);
    if (b0 < 0x80) return {1, true, false};
    size_t need;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte (Unicode table 3-7)
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        need = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        need = 3;
        if (b0 == 0xE0) lo = 0xA0;
        if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        need = 4;
        if (b0 == 0xF0) lo = 0x90;
        if (b0 == 0xF4) hi = 0x8F;
    } else {
        return {1, false, false};
    }
    size_t k = 1;
    for (; k < need; ++k) {
        if (i + k >= s.size()) return {k, false, true};
        const uint8_t b = byte(i + k);
        const bool ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
        if (!ok) return {k, false, false};
    }
    return {need, true, false};
}

uint32_t decode(std::string_view s, size_t& i) {
    const auto* p = reinterpret_cast<const uint8_t*>(s.data()) + i;
    uint32_t cp;
    if (p[0] < 0x80) {
        i += 1;
        return p[0];
    } else if (p[0] < 0xE0) {
        cp = ((p[0] & 0x1Fu) << 6) | (p[1] & 0x3Fu);
        i += 2;
    } else if (p[0] < 0xF0) {
        cp = ((p[0] & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
        i += 3;
    } else {
        cp = ((p[0] & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) |
             (p[3] & 0x3Fu);
        i += 4;
    }
    return cp;
}

size_t find_invalid(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        if (static_cast<uint8_t>(s[i]) < 0x80) {
            ++i;
            continue;
        }
        const Step st = step(s, i);
        if (!st.valid) return i;
        i += st.length;
    }
    return std::string_view::npos;
}

std::string repair(std::string_view s, bool keep_truncated_tail) {
    std::string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
        const Step st = step(s, i);
        if (st.valid || (st.truncated && keep_truncated_tail))
            out.append(s.substr(i, st.length));
        else
            out.append(replacement);
        i += st.length;
    }
    return out;
}

size_t truncated_tail(std::string_view s) {
    // A character is at most 4 bytes: only one of the last 3 can start a cut-off one.
    for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
        const size_t i = s.size() - back;
        if ((static_cast<uint8_t>(s[i]) & 0xC0) == 0x80) continue;
        const Step st = step(s, i);
        return st.truncated && i + st.length == s.size() ? back : 0;
    }
    return 0;
}

}  // namespace anelm::utf8
