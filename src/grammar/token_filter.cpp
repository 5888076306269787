#include "grammar/token_filter.h"

#include <algorithm>
#include <limits>
#include <map>

#include "grammar/json_string.h"

namespace anelm::grammar {

namespace {

void set_bit(std::vector<uint32_t>& bits, int32_t id) {
    bits[id >> 5] |= 1u << (id & 31);
}

bool has_bit(const std::vector<uint32_t>& bits, int32_t id) {
    return bits[id >> 5] >> (id & 31) & 1;
}

// Matchers for one thread's walks, reused so that a walk allocates nothing: one per
// trie depth, then three for the rests of closing tokens.
std::vector<Matcher>& pool(const Matcher& like, size_t n) {
    thread_local std::vector<Matcher> matchers;
    if (matchers.size() < n) matchers.resize(n, like);
    return matchers;
}

}  // namespace

TokenFilter::TokenFilter(const Tokenizer& tokenizer, std::span<const int32_t> stop_ids)
    : bytes_(tokenizer.n_vocab()), stop_ids_(stop_ids.begin(), stop_ids.end()) {
    for (int32_t id = 0; id < tokenizer.n_vocab(); ++id) {
        const bool stop = std::find(stop_ids_.begin(), stop_ids_.end(), id) != stop_ids_.end();
        if (!stop && !tokenizer.is_special(id)) bytes_[id] = tokenizer.token_bytes(id);
    }
    build_trie();
    build_string_cache();
}

// Preorder nodes from the tokens sorted by bytes: a token adds nodes for the bytes
// past what it shares with the one before; a node's subtree ends where a later
// token shares less than its depth.
void TokenFilter::build_trie() {
    std::vector<int32_t> sorted;
    for (int32_t id = 0; id < n_vocab(); ++id)
        if (!bytes_[id].empty()) sorted.push_back(id);
    std::sort(sorted.begin(), sorted.end(),
              [&](int32_t a, int32_t b) { return bytes_[a] < bytes_[b]; });
    std::vector<uint32_t> open;  // open[d - 1]: the node at depth d on the current path
    const std::string* prev = nullptr;
    for (int32_t id : sorted) {
        const std::string& s = bytes_[id];
        size_t common = 0;
        if (prev)
            while (common < s.size() && common < prev->size() && s[common] == (*prev)[common])
                ++common;
        for (size_t d = open.size(); d > common; --d) nodes_[open[d - 1]].end = nodes_.size();
        open.resize(common);
        for (size_t d = common; d < s.size(); ++d) {
            open.push_back(static_cast<uint32_t>(nodes_.size()));
            nodes_.push_back({0, static_cast<uint32_t>(ids_.size()), 0,
                              static_cast<uint16_t>(d + 1), static_cast<uint8_t>(s[d])});
        }
        TrieNode& leaf = nodes_[open.back()];
        if (leaf.n_ids == 0) leaf.first = static_cast<uint32_t>(ids_.size());
        ++leaf.n_ids;
        ids_.push_back(id);
        max_depth_ = std::max(max_depth_, s.size());
        prev = &s;
    }
    for (uint32_t n : open) nodes_[n].end = nodes_.size();
}

void TokenFilter::build_string_cache() {
    in_string_.assign((bytes_.size() + 31) / 32, 0);
    string_chars_.assign(bytes_.size(), 0);
    std::map<std::string, std::vector<std::pair<int32_t, uint32_t>>> by_rest;
    for (int32_t id = 0; id < n_vocab(); ++id) {
        const std::string& s = bytes_[id];
        if (s.empty()) continue;
        auto state = json_string::normal;
        uint32_t chars = 0;
        size_t i = 0;
        for (; i < s.size(); ++i) {
            const int8_t next = json_string::step(state, static_cast<uint8_t>(s[i]));
            if (next == json_string::reject) break;
            if (next == json_string::close) {
                by_rest[s.substr(i + 1)].emplace_back(id, chars);
                break;
            }
            chars += state == json_string::normal;
            state = json_string::State(next);
        }
        if (i == s.size()) {
            set_bit(in_string_, id);
            string_chars_[id] = chars;
        }
    }
    for (auto& [rest, tokens] : by_rest) {
        for (auto [id, chars] : tokens)
            closing_.push_back({id, chars, static_cast<uint32_t>(rests_.size())});
        rests_.push_back(rest);
    }
}

void TokenFilter::allowed(const Matcher& m, std::vector<uint32_t>& bits) const {
    bits.assign((bytes_.size() + 31) / 32, 0);
    bool other = false;
    for (size_t k = 0; k < m.n_stacks(); ++k) {
        if (m.open_string(k))
            add_open_string(m, k, bits);
        else
            other = true;
    }
    if (other) walk(m, bits);
    if (m.accepts_end())
        for (int32_t id : stop_ids_)
            if (id >= 0 && id < n_vocab()) set_bit(bits, id);
}

// Depth-first over the trie, one matcher per depth: a byte that fails skips the
// whole subtree below it.
void TokenFilter::walk(const Matcher& m, std::vector<uint32_t>& bits) const {
    std::vector<Matcher>& states = pool(m, max_depth_ + 4);
    for (size_t d = 0; d <= max_depth_; ++d) states[d].grammar_ = m.grammar_;
    states[0].assign_without_open_strings(m);
    for (size_t i = 0; i < nodes_.size();) {
        const TrieNode& n = nodes_[i];
        if (!states[n.depth].step_from(states[n.depth - 1], n.byte)) {
            i = n.end;
            continue;
        }
        for (uint32_t j = n.first; j < n.first + n.n_ids; ++j) set_bit(bits, ids_[j]);
        ++i;
    }
}

// Stack k is inside a string between characters: tokens that stay inside come from
// the cache (with room for their characters); tokens that close it are tried from
// the state after the quote, once for each distinct rest.
void TokenFilter::add_open_string(const Matcher& m, size_t k, std::vector<uint32_t>& bits) const {
    const Matcher::Frame& top = *m.open_string(k);
    const Node& node = m.grammar_.node(top.node);
    const uint32_t count = top.a;
    if (node.max_length == unbounded) {
        for (size_t w = 0; w < bits.size(); ++w) bits[w] |= in_string_[w];
    } else {
        const uint32_t room = node.max_length - count;
        for (int32_t id = 0; id < n_vocab(); ++id)
            if (has_bit(in_string_, id) && string_chars_[id] <= room) set_bit(bits, id);
    }
    const std::span<Matcher> tmp = std::span(pool(m, max_depth_ + 4)).subspan(max_depth_ + 1, 3);
    for (Matcher& t : tmp) t.grammar_ = m.grammar_;
    tmp[0].assign_closed(m, k);
    uint32_t last = std::numeric_limits<uint32_t>::max();
    bool rest_ok = false;
    for (const Closing& c : closing_) {
        const uint64_t total = uint64_t(count) + c.chars;
        if (total < node.min_length || total > node.max_length) continue;
        if (c.rest != last) {
            last = c.rest;
            const Matcher* cur = &tmp[0];
            rest_ok = true;
            for (char b : rests_[c.rest]) {
                Matcher& next = cur == &tmp[1] ? tmp[2] : tmp[1];
                if (!next.step_from(*cur, static_cast<uint8_t>(b))) {
                    rest_ok = false;
                    break;
                }
                cur = &next;
            }
        }
        if (rest_ok) set_bit(bits, c.id);
    }
}

void TokenFilter::apply(const Matcher& m, std::span<float> logits) const {
    thread_local std::vector<uint32_t> bits;
    allowed(m, bits);
    const auto n = static_cast<int32_t>(logits.size());
    for (int32_t id = 0; id < n; ++id)
        if (id >= n_vocab() || !has_bit(bits, id))
            logits[id] = -std::numeric_limits<float>::infinity();
}

bool TokenFilter::advance(Matcher& m, int32_t id) const {
    if (std::find(stop_ids_.begin(), stop_ids_.end(), id) != stop_ids_.end())
        return m.accepts_end();
    if (id < 0 || id >= n_vocab() || bytes_[id].empty()) return false;
    return m.advance(bytes_[id]);
}

}  // namespace anelm::grammar
