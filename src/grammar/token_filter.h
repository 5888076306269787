// Which tokens may come next under a Matcher: the vocabulary's bytes in a trie,
// walked with the matcher so that shared prefixes are matched once, plus a
// cache for the commonest state (inside a string, where almost every token
// fits). Build one per tokenizer; it is immutable, so requests on several
// threads may share it, each with its own Matcher.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "grammar/matcher.h"
#include "tokenizer/tokenizer.h"

namespace anelm::grammar {

class TokenFilter {
public:
    // stop_ids end the document: they are allowed exactly when it may end.
    // Special tokens (and stop ids) never appear inside it.
    TokenFilter(const Tokenizer& tokenizer, std::span<const int32_t> stop_ids);

    int32_t n_vocab() const { return static_cast<int32_t>(bytes_.size()); }
    // What id adds to the document; empty for special tokens and stop ids.
    const std::string& token_bytes(int32_t id) const { return bytes_[id]; }

    // bits[id / 32] >> (id % 32) & 1: id may come next (n_vocab bits).
    void allowed(const Matcher& m, std::vector<uint32_t>& bits) const;
    // Sets the logits of tokens that may not come next to -inf (ids from n_vocab on too).
    void apply(const Matcher& m, std::span<float> logits) const;
    // Advances m by the sampled id; false (m unchanged) when id may not come next.
    // A stop id leaves m as it is and says whether the document may end.
    bool advance(Matcher& m, int32_t id) const;

private:
    struct TrieNode {
        uint32_t end;    // index past this node's subtree (preorder)
        uint32_t first;  // its tokens: ids_[first, first + n_ids)
        uint16_t n_ids;
        uint16_t depth;  // bytes from the root, >= 1
        uint8_t byte;
    };
    // A token that closes a string from between characters: chars before the quote,
    // then the bytes after it (index into rests_).
    struct Closing {
        int32_t id;
        uint32_t chars;
        uint32_t rest;
    };

    void build_trie();
    void build_string_cache();
    void walk(const Matcher& m, std::vector<uint32_t>& bits) const;
    void add_open_string(const Matcher& m, size_t k, std::vector<uint32_t>& bits) const;

    std::vector<std::string> bytes_;
    std::vector<int32_t> stop_ids_;
    std::vector<TrieNode> nodes_;
    std::vector<int32_t> ids_;  // token ids in trie order
    size_t max_depth_ = 0;
    // From a string's inside, between characters:
    std::vector<uint32_t> in_string_;     // bits: the token stays inside
    std::vector<uint32_t> string_chars_;  // the characters it starts there
    std::vector<Closing> closing_;        // sorted by rest
    std::vector<std::string> rests_;
};

}  // namespace anelm::grammar
