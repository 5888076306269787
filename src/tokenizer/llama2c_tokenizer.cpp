#include "tokenizer/llama2c_tokenizer.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "base/mapped_file.h"

namespace anelm {

namespace {

constexpr int32_t bos = 1;
constexpr float no_merge = -1e10f;  // run.c's starting best score: pairs must beat it

int32_t read_i32(const MappedFile& f, size_t at) {
    int32_t v;
    std::memcpy(&v, f.data() + at, 4);
    return v;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

Llama2cTokenizer::Llama2cTokenizer(const std::string& path) : path_(path) {
    const MappedFile file(path);
    if (file.size() < 4) fail("{}: too short for a llama2.c tokenizer header", path);
    const int32_t max_token_length = read_i32(file, 0);
    if (max_token_length <= 0)
        fail("{}: offset 0: max_token_length {} is not positive", path, max_token_length);
    size_t at = 4;
    while (at < file.size()) {
        if (at + 8 > file.size())
            fail("{}: offset {}: token {} is cut off", path, at, pieces_.size());
        float score;
        std::memcpy(&score, file.data() + at, 4);
        const int32_t length = read_i32(file, at + 4);
        if (length < 0 || length > max_token_length || at + 8 + length > file.size())
            fail("{}: offset {}: token {} has length {} (max_token_length {}, file size {})", path,
                 at + 4, pieces_.size(), length, max_token_length, file.size());
        pieces_.emplace_back(reinterpret_cast<const char*>(file.data() + at + 8), length);
        scores_.push_back(score);
        at += 8 + static_cast<size_t>(length);
    }
    if (pieces_.size() < 3 + 256)
        fail("{}: {} tokens; expected <unk>, <s>, </s> and 256 bytes", path, pieces_.size());
    lookup_.reserve(pieces_.size());
    for (size_t id = 0; id < pieces_.size(); ++id)
        lookup_.insert(pieces_[id], static_cast<int32_t>(id));
}

std::vector<int32_t> Llama2cTokenizer::encode(std::string_view text, bool add_special) const {
    std::vector<int32_t> tokens;
    tokens.reserve(text.size() + 3);
    if (add_special) tokens.push_back(bos);
    if (!text.empty()) {
        const int32_t space = lookup_.find(" ");
        if (space < 0) fail("{}: no \" \" piece for the dummy prefix", path_);
        tokens.push_back(space);
    }
    // run.c's reading of UTF-8: a character is a non-continuation byte and up to
    // three continuation bytes after it; stray continuation bytes stand alone.
    size_t i = 0;
    while (i < text.size()) {
        size_t end = i + 1;
        while (end < text.size() && end - i < 4 && (static_cast<uint8_t>(text[end]) & 0xC0) == 0x80)
            ++end;
        const std::string_view ch = text.substr(i, end - i);
        const int32_t id = lookup_.find(ch);
        if (id >= 0) {
            tokens.push_back(id);
        } else {
            for (char c : ch) tokens.push_back(static_cast<uint8_t>(c) + 3);
        }
        i = end;
    }
    merge_all(tokens);
    return tokens;
}

int32_t Llama2cTokenizer::merged_id(int32_t left, int32_t right, std::string& buffer) const {
    buffer.assign(pieces_[left]);
    buffer += pieces_[right];
    return lookup_.find(buffer);
}

// Same result as run.c's loop (take the best-scoring merge anywhere, leftmost on
// ties, until none beats -1e10) in O(n log n): candidates in a heap ordered by
// score then position, stale ones skipped when popped.
void Llama2cTokenizer::merge_all(std::vector<int32_t>& tokens) const {
    const auto n = static_cast<int32_t>(tokens.size());
    std::vector<int32_t> next(n), prev(n);
    for (int32_t k = 0; k < n; ++k) {
        next[k] = k + 1 < n ? k + 1 : -1;
        prev[k] = k - 1;
    }
    auto worse = [](const Candidate& a, const Candidate& b) {
        return a.score != b.score ? a.score < b.score : a.pos > b.pos;
    };
    std::vector<Candidate> heap;
    std::string buffer;
    auto consider = [&](int32_t pos) {
        if (pos < 0 || next[pos] < 0) return;
        const int32_t right = next[pos];
        const int32_t id = merged_id(tokens[pos], tokens[right], buffer);
        if (id < 0 || !(scores_[id] > no_merge)) return;
        heap.push_back({scores_[id], pos, tokens[pos], tokens[right], id});
        std::push_heap(heap.begin(), heap.end(), worse);
    };
    for (int32_t k = 0; k + 1 < n; ++k) consider(k);
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), worse);
        const Candidate c = heap.back();
        heap.pop_back();
        if (tokens[c.pos] != c.left || next[c.pos] < 0 || tokens[next[c.pos]] != c.right) continue;
        const int32_t right = next[c.pos];
        tokens[c.pos] = c.merged;
        tokens[right] = -1;
        next[c.pos] = next[right];
        if (next[c.pos] >= 0) prev[next[c.pos]] = c.pos;
        consider(prev[c.pos]);
        consider(c.pos);
    }
    tokens.erase(std::remove(tokens.begin(), tokens.end(), -1), tokens.end());
}

// run.c prints generated text piece by piece with decode(prev, token) and
// safe_printf; this returns exactly those bytes:
// - BOS (id 1) prints nothing: run.c starts printing after it and stops at a
//   generated BOS;
// - after BOS a piece loses one leading space (SentencePiece drops the dummy
//   prefix);
// - a piece "<0xXX>" is the raw byte XX (like run.c's sscanf "<0x%02hhX>", one or
//   two hex digits);
// - safe_printf drops a one-byte piece unless it is printable or whitespace in
//   the C locale, so lone bytes >= 0x80 of a byte-encoded character vanish;
// - printf("%s") stops at a NUL byte.
// Ids outside the vocabulary are skipped.
std::string Llama2cTokenizer::decode(std::span<const int32_t> ids) const {
    std::string out;
    int32_t prev = -1;
    for (int32_t id : ids) {
        if (id < 0 || static_cast<size_t>(id) >= pieces_.size()) continue;
        char byte;
        out.append(printed(id, prev, byte));
        prev = id;
    }
    return out;
}

std::string Llama2cTokenizer::token_bytes(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= pieces_.size()) return {};
    char byte;
    return std::string(printed(id, -1, byte));
}

std::string_view Llama2cTokenizer::printed(int32_t id, int32_t prev, char& byte) const {
    if (id == bos) return {};
    std::string_view piece = pieces_[id];
    piece = piece.substr(0, piece.find('\0'));
    if (prev == bos && piece.starts_with(' ')) piece.remove_prefix(1);
    if (piece.starts_with("<0x") && piece.size() > 3 && hex_digit(piece[3]) >= 0) {
        int v = hex_digit(piece[3]);
        if (piece.size() > 4 && hex_digit(piece[4]) >= 0) v = v * 16 + hex_digit(piece[4]);
        byte = static_cast<char>(v);
        piece = std::string_view(&byte, 1);
    }
    if (piece.empty() || piece[0] == '\0') return {};
    if (piece.size() == 1) {
        const auto b = static_cast<uint8_t>(piece[0]);
        const bool printable = b >= 0x20 && b <= 0x7E;
        const bool space = b == ' ' || (b >= '\t' && b <= '\r');
        if (!printable && !space) return {};
    }
    return piece;
}

std::string Llama2cTokenizer::token_to_piece(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= pieces_.size()) return {};
    return pieces_[id];
}

}  // namespace anelm
