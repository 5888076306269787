#include "synth/byte_bpe.h"

#include <cstdint>
#include <map>
#include <tuple>
#include <unordered_map>

namespace anelm::synth {

namespace {

std::string utf8(uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s += static_cast<char>(cp);
    } else if (cp < 0x800) {
        s += static_cast<char>(0xc0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
        s += static_cast<char>(0xe0 | (cp >> 12));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        s += static_cast<char>(0x80 | (cp & 0x3f));
    }
    return s;
}

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_newline(char c) {
    return c == '\n' || c == '\r';
}
// Bytes of multi-byte UTF-8 count as letters, so non-ASCII words stay whole.
bool is_letter(char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || u >= 0x80;
}
bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
bool is_punct(char c) {
    return !is_space(c) && !is_letter(c) && !is_digit(c);
}

// Length of a contraction ('s, 't, 're, 've, 'm, 'll, 'd) at text[i], or 0.
size_t contraction(std::string_view text, size_t i) {
    if (text[i] != '\'') return 0;
    auto lower = [&](size_t k) {
        return k < text.size() ? static_cast<char>(text[k] | 0x20) : '\0';
    };
    const char a = lower(i + 1), b = lower(i + 2);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

// Length of the piece starting at text[i], following the split pattern's alternatives in order.
size_t piece_length(std::string_view text, size_t i) {
    const size_t n = text.size();
    auto run = [&](size_t j, bool (*pred)(char)) {
        while (j < n && pred(text[j])) ++j;
        return j;
    };
    if (size_t len = contraction(text, i)) return len;
    const char c = text[i];
    if (is_letter(c)) return run(i, is_letter) - i;
    if (!is_digit(c) && !is_newline(c) && i + 1 < n && is_letter(text[i + 1]))
        return run(i + 1, is_letter) - i;
    if (is_digit(c)) return 1;
    if (is_punct(c) || (c == ' ' && i + 1 < n && is_punct(text[i + 1]))) {
        const size_t j = run(c == ' ' ? i + 1 : i, is_punct);
        return run(j, is_newline) - i;
    }
    // Whitespace: up to the last newline of the run; else all but the space that
    // belongs to the next word; else the whole run.
    const size_t end = run(i, is_space);
    for (size_t j = end; j > i; --j)
        if (is_newline(text[j - 1])) return j - i;
    if (end < n && end - i > 1) return end - 1 - i;
    return end - i;
}

struct Word {
    std::vector<int> symbols;
    int64_t count = 0;
};

uint64_t pair_key(int a, int b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

class Trainer {
public:
    explicit Trainer(std::string_view text) {
        for (const auto& ch : byte_chars()) add_symbol(ch);
        std::map<std::string, int64_t>
            counts;  // ordered, so words are numbered the same everywhere
        for (const auto& piece : split_pieces(text)) ++counts[piece];
        for (const auto& [piece, count] : counts) {
            Word w;
            w.count = count;
            for (unsigned char b : piece) w.symbols.push_back(b);
            count_pairs(w, +1);
            words_.push_back(std::move(w));
        }
    }

    BpeMerges run(size_t max_tokens) {
        BpeMerges out;
        while (out.tokens.size() < max_tokens) {
            const auto [a, b, count] = best_pair();
            if (count < 2) break;
            const std::string merged = symbols_[a] + symbols_[b];
            const bool is_new = !index_.count(merged);
            const int id = add_symbol(merged);
            for (Word& w : words_) merge_in(w, a, b, id);
            out.merges.emplace_back(symbols_[a], symbols_[b]);
            if (is_new) out.tokens.push_back(merged);
        }
        return out;
    }

private:
    int add_symbol(const std::string& s) {
        auto [it, inserted] = index_.try_emplace(s, static_cast<int>(symbols_.size()));
        if (inserted) symbols_.push_back(s);
        return it->second;
    }

    void count_pairs(const Word& w, int sign) {
        for (size_t i = 0; i + 1 < w.symbols.size(); ++i) {
            const uint64_t key = pair_key(w.symbols[i], w.symbols[i + 1]);
            if ((pair_counts_[key] += sign * w.count) == 0) pair_counts_.erase(key);
        }
    }

    std::tuple<int, int, int64_t> best_pair() const {
        int best_a = -1, best_b = -1;
        int64_t best = 0;
        for (const auto& [key, count] : pair_counts_) {
            const int a = static_cast<int>(key >> 32), b = static_cast<int>(key & 0xffffffffu);
            if (count > best ||
                (count == best && std::tie(symbols_[a], symbols_[b]) <
                                      std::tie(symbols_[best_a], symbols_[best_b]))) {
                best = count;
                best_a = a;
                best_b = b;
            }
        }
        return {best_a, best_b, best};
    }

    void merge_in(Word& w, int a, int b, int id) {
        bool found = false;
        for (size_t i = 0; i + 1 < w.symbols.size() && !found; ++i)
            found = w.symbols[i] == a && w.symbols[i + 1] == b;
        if (!found) return;
        count_pairs(w, -1);
        std::vector<int> merged;
        for (size_t i = 0; i < w.symbols.size(); ++i) {
            if (i + 1 < w.symbols.size() && w.symbols[i] == a && w.symbols[i + 1] == b) {
                merged.push_back(id);
                ++i;
            } else {
                merged.push_back(w.symbols[i]);
            }
        }
        w.symbols = std::move(merged);
        count_pairs(w, +1);
    }

    std::vector<std::string> symbols_;  // byte-char strings; ids 0..255 are the bytes
    std::unordered_map<std::string, int> index_;
    std::vector<Word> words_;  // symbols of each word are ids; bytes are their own ids
    std::unordered_map<uint64_t, int64_t> pair_counts_;
};

}  // namespace

const std::array<std::string, 256>& byte_chars() {
    static const std::array<std::string, 256> table = [] {
        std::array<std::string, 256> t;
        uint32_t next = 256;
        for (uint32_t b = 0; b < 256; ++b) {
            // Printable Latin-1 bytes stand for themselves; the rest move above 255.
            const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
            t[b] = utf8(printable ? b : next++);
        }
        return t;
    }();
    return table;
}

std::string to_byte_chars(std::string_view bytes) {
    std::string out;
    for (unsigned char b : bytes) out += byte_chars()[b];
    return out;
}

std::vector<std::string> split_pieces(std::string_view text) {
    std::vector<std::string> pieces;
    for (size_t i = 0; i < text.size();) {
        const size_t len = piece_length(text, i);
        pieces.emplace_back(text.substr(i, len));
        i += len;
    }
    return pieces;
}

BpeMerges learn_merges(std::string_view text, size_t max_tokens) {
    return Trainer(text).run(max_tokens);
}

}  // namespace anelm::synth
