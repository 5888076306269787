#include "tokenizer/added_tokens.h"

#include <utf8proc.h>

#include <algorithm>
#include <map>
#include <memory>

#include "tokenizer/utf8.h"

namespace anelm {

namespace {

bool is_white_space(uint32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}

// Unicode \w as the Rust regex crate has it: letters, marks, decimal and letter
// numbers, connector punctuation, joiners.
bool is_word(uint32_t cp) {
    if (cp == 0x200C || cp == 0x200D) return true;
    switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
        case UTF8PROC_CATEGORY_LU:
        case UTF8PROC_CATEGORY_LL:
        case UTF8PROC_CATEGORY_LT:
        case UTF8PROC_CATEGORY_LM:
        case UTF8PROC_CATEGORY_LO:
        case UTF8PROC_CATEGORY_MN:
        case UTF8PROC_CATEGORY_MC:
        case UTF8PROC_CATEGORY_ME:
        case UTF8PROC_CATEGORY_ND:
        case UTF8PROC_CATEGORY_NL:
        case UTF8PROC_CATEGORY_PC:
            return true;
        default:
            return false;
    }
}

// The code point that ends s (s non-empty, valid UTF-8).
uint32_t last_char(std::string_view s) {
    size_t i = s.size() - 1;
    while (i > 0 && (static_cast<uint8_t>(s[i]) & 0xC0) == 0x80) --i;
    return utf8::decode(s, i);
}

uint32_t first_char(std::string_view s) {
    size_t i = 0;
    return utf8::decode(s, i);
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens, bool match_normalized) {
    for (const AddedToken& t : tokens)
        if (t.normalized == match_normalized && !t.content.empty()) tokens_.push_back(t);
    // Build the trie with std::map children first, then flatten it into sorted edges.
    struct Building {
        std::map<uint8_t, std::unique_ptr<Building>> children;
        int32_t token = -1;
    };
    Building root;
    for (size_t k = 0; k < tokens_.size(); ++k) {
        Building* node = &root;
        for (char c : tokens_[k].content) {
            auto& child = node->children[static_cast<uint8_t>(c)];
            if (!child) child = std::make_unique<Building>();
            node = child.get();
        }
        node->token = static_cast<int32_t>(k);  // a later duplicate wins, as in a map
        starts_[static_cast<uint8_t>(tokens_[k].content[0])] = true;
    }
    std::vector<const Building*> order{&root};
    nodes_.push_back({});
    for (size_t n = 0; n < order.size(); ++n) {
        const Building* b = order[n];
        nodes_[n].token = b->token;
        nodes_[n].first_child = static_cast<uint32_t>(edges_.size());
        nodes_[n].n_children = static_cast<uint32_t>(b->children.size());
        for (const auto& [byte, child] : b->children) {
            edges_.push_back({byte, static_cast<uint32_t>(order.size())});
            order.push_back(child.get());
            nodes_.push_back({});
        }
    }
}

int32_t AddedTokenMatcher::longest_at(std::string_view text, size_t pos, size_t& out_end) const {
    uint32_t node = 0;
    int32_t found = -1;
    for (size_t i = pos; i < text.size(); ++i) {
        const Node& n = nodes_[node];
        const auto first = edges_.begin() + n.first_child;
        const auto last = first + n.n_children;
        const auto byte = static_cast<uint8_t>(text[i]);
        const auto it = std::lower_bound(first, last, byte,
                                         [](const Edge& e, uint8_t b) { return e.byte < b; });
        if (it == last || it->byte != byte) break;
        node = it->node;
        if (nodes_[node].token >= 0) {
            found = nodes_[node].token;
            out_end = i + 1;
        }
    }
    return found;
}

void AddedTokenMatcher::split(std::string_view text, std::vector<Segment>& out) const {
    size_t done = 0;  // end of the last segment emitted
    size_t pos = 0;
    while (pos < text.size()) {
        if (!starts_[static_cast<uint8_t>(text[pos])]) {
            ++pos;
            continue;
        }
        size_t end = 0;
        const int32_t k = longest_at(text, pos, end);
        if (k < 0) {
            ++pos;
            continue;
        }
        const AddedToken& token = tokens_[k];
        size_t start = pos;
        pos = end;
        if (token.single_word) {
            const bool space_before = start == 0 || !is_word(last_char(text.substr(0, start)));
            const bool space_after = end == text.size() || !is_word(first_char(text.substr(end)));
            if (!space_before || !space_after) continue;
        }
        if (token.lstrip) {
            // Back over whitespace, but not into the previous segment.
            while (start > done) {
                size_t p = start - 1;
                while (p > 0 && (static_cast<uint8_t>(text[p]) & 0xC0) == 0x80) --p;
                size_t q = p;
                if (!is_white_space(utf8::decode(text, q))) break;
                start = p;
            }
        }
        if (token.rstrip) {
            while (end < text.size()) {
                size_t next = end;
                if (!is_white_space(utf8::decode(text, next))) break;
                end = next;
            }
            pos = end;
        }
        if (done < start)
            out.push_back({static_cast<uint32_t>(done), static_cast<uint32_t>(start), -1});
        out.push_back({static_cast<uint32_t>(start), static_cast<uint32_t>(end), token.id});
        done = end;
    }
    if (done < text.size() || text.empty())
        out.push_back({static_cast<uint32_t>(done), static_cast<uint32_t>(text.size()), -1});
}

}  // namespace anelm
