// Added tokens (special or not) are cut out of the text before anything else,
// leftmost first and longest on ties, as Hugging Face's tokenizers does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace anelm {

struct AddedToken {
    std::string content;
    int32_t id = -1;
    bool special = false;
    bool lstrip = false;       // the match swallows whitespace before it
    bool rstrip = false;       // the match swallows whitespace after it
    bool single_word = false;  // only matches with no word character on either side
    bool normalized = false;   // matched in normalized text instead of raw text
};

class AddedTokenMatcher {
public:
    struct Segment {
        uint32_t begin, end;
        int32_t id;  // -1: ordinary text
    };

    // Tokens with normalized == match_normalized take part.
    AddedTokenMatcher(const std::vector<AddedToken>& tokens, bool match_normalized);
    bool empty() const { return tokens_.empty(); }

    // Cuts text into ordinary stretches and added tokens (appended to out).
    void split(std::string_view text, std::vector<Segment>& out) const;

private:
    struct Node {
        uint32_t first_child = 0;
        uint32_t n_children = 0;
        int32_t token = -1;  // index into tokens_ of the token ending here
    };
    struct Edge {
        uint8_t byte;
        uint32_t node;
    };
    // The longest token starting at pos: its index, and end through out_end.
    int32_t longest_at(std::string_view text, size_t pos, size_t& out_end) const;

    std::vector<AddedToken> tokens_;
    std::vector<Node> nodes_;
    std::vector<Edge> edges_;  // children of each node, sorted by byte
    bool starts_[256] = {};
};

}  // namespace anelm
