#include "grammar/json_string.h"

#include <array>

namespace anelm::grammar::json_string {

namespace {

bool is_hex(uint8_t b) {
    return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F');
}

int8_t compute(State s, uint8_t b) {
    auto to = [](State next) { return int8_t(next); };
    constexpr int8_t no = reject;
    const bool cont = b >= 0x80 && b <= 0xBF;
    switch (s) {
        case normal:
            if (b == '"') return close;
            if (b == '\\') return to(escape);
            if (b < 0x20) return no;
            if (b < 0x80) return to(normal);
            if (b >= 0xC2 && b <= 0xDF) return to(cont1);
            if (b == 0xE0) return to(cont2_e0);
            if (b == 0xED) return to(cont2_ed);
            if (b >= 0xE1 && b <= 0xEF) return to(cont2);
            if (b == 0xF0) return to(cont3_f0);
            if (b >= 0xF1 && b <= 0xF3) return to(cont3);
            if (b == 0xF4) return to(cont3_f4);
            return no;
        case escape:
            if (b == 'u') return to(hex1);
            for (char e : {'"', '\\', '/', 'b', 'f', 'n', 'r', 't'})
                if (b == e) return to(normal);
            return no;
        case hex1:
            if (b == 'd' || b == 'D') return to(hex2_d);
            return is_hex(b) ? to(hex2) : no;
        case hex2:
            return is_hex(b) ? to(hex3) : no;
        case hex2_d:
            if (b >= '0' && b <= '7') return to(hex3);
            if (b == '8' || b == '9' || b == 'a' || b == 'b' || b == 'A' || b == 'B')
                return to(high3);
            return no;  // a low surrogate with no high one before it
        case hex3:
            return is_hex(b) ? to(hex4) : no;
        case hex4:
            return is_hex(b) ? to(normal) : no;
        case high3:
            return is_hex(b) ? to(high4) : no;
        case high4:
            return is_hex(b) ? to(low_slash) : no;
        case low_slash:
            return b == '\\' ? to(low_u) : no;
        case low_u:
            return b == 'u' ? to(low1) : no;
        case low1:
            return b == 'd' || b == 'D' ? to(low2) : no;
        case low2:
            return (b >= 'c' && b <= 'f') || (b >= 'C' && b <= 'F') ? to(low3) : no;
        case low3:
            return is_hex(b) ? to(low4) : no;
        case low4:
            return is_hex(b) ? to(normal) : no;
        case cont1:
            return cont ? to(normal) : no;
        case cont2:
            return cont ? to(cont1) : no;
        case cont2_e0:
            return b >= 0xA0 && b <= 0xBF ? to(cont1) : no;
        case cont2_ed:
            return b >= 0x80 && b <= 0x9F ? to(cont1) : no;
        case cont3:
            return cont ? to(cont2) : no;
        case cont3_f0:
            return b >= 0x90 && b <= 0xBF ? to(cont2) : no;
        case cont3_f4:
            return b >= 0x80 && b <= 0x8F ? to(cont2) : no;
        case n_states:
            break;
    }
    return no;
}

using Table = std::array<std::array<int8_t, 256>, n_states>;

const Table& table() {
    static const Table t = [] {
        Table t{};
        for (int s = 0; s < n_states; ++s)
            for (int b = 0; b < 256; ++b) t[s][b] = compute(State(s), uint8_t(b));
        return t;
    }();
    return t;
}

}  // namespace

int8_t step(State state, uint8_t byte) {
    return table()[state][byte];
}

}  // namespace anelm::grammar::json_string
