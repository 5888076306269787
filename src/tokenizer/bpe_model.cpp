#include "tokenizer/bpe_model.h"

#include <algorithm>
#include <array>

#include "base/error.h"
#include "tokenizer/utf8.h"

namespace anelm {

namespace {

// Words longer than this are not cached (Hugging Face uses the same bound).
constexpr size_t max_cached_word = 256;
constexpr size_t max_cached_words = 1 << 17;

// Min-heap order: lowest rank, then leftmost position.
bool later(const BpeModel::Scratch::Candidate& a, const BpeModel::Scratch::Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
}

}  // namespace

void BpeModel::reserve(size_t n_tokens, size_t n_merges) {
    vocab_.reserve(n_tokens);
    pieces_.reserve(n_tokens);
    merges_.reserve(n_merges);
}

void BpeModel::add_token(std::string_view token, int32_t id) {
    if (id < 0) fail("BPE vocabulary: negative id {} for token \"{}\"", id, token);
    vocab_.insert(token, id);
    if (static_cast<size_t>(id) >= pieces_.size()) pieces_.resize(static_cast<size_t>(id) + 1);
    pieces_[id] = {static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(token.size()), true};
    arena_.append(token);
}

void BpeModel::add_merges(const MergeList& merges, const std::string& where) {
    // Loading is bound by cache misses in the vocabulary and merge tables, so
    // lookups are pipelined: merge k + 16 is hashed and its slots prefetched,
    // merge k + 8 has its key bytes prefetched, merge k is resolved.
    constexpr size_t ring = 32, ahead = 16, near = 8;
    struct Pending {
        std::string joined;  // left + right, less right's continuing-subword prefix
        uint64_t hash[3];
        int32_t id[3];
    };
    std::array<Pending, ring> pending;
    const size_t n = merges.size();
    const size_t skip = options_.continuing_subword_prefix.size();
    auto prepare = [&](size_t k) {
        Pending& p = pending[k % ring];
        const std::string_view right = merges.right(k);
        p.joined.assign(merges.left(k)).append(right.substr(std::min(skip, right.size())));
        p.hash[0] = hash_bytes(merges.left(k));
        p.hash[1] = hash_bytes(right);
        p.hash[2] = hash_bytes(p.joined);
        for (uint64_t h : p.hash) vocab_.prefetch_slot(h);
    };
    merges_.reserve(n);
    for (size_t k = 0; k < std::min(ahead, n); ++k) prepare(k);
    for (size_t k = 0; k < n + near; ++k) {
        if (k + ahead < n) prepare(k + ahead);
        if (k + near < n)
            for (uint64_t h : pending[(k + near) % ring].hash) vocab_.prefetch_key(h);
        if (k >= near) {  // insert merge k - near, whose merge-table slot was prefetched
            const Pending& q = pending[(k - near) % ring];
            merges_.insert(q.id[0], q.id[1], {static_cast<int32_t>(k - near), q.id[2]});
        }
        if (k >= n) continue;
        Pending& p = pending[k % ring];
        const std::string_view keys[3] = {merges.left(k), merges.right(k), p.joined};
        for (size_t t = 0; t < 3; ++t) {
            p.id[t] = vocab_.find(keys[t], p.hash[t]);
            if (p.id[t] < 0)
                fail("{}[{}]: {} \"{}\" is not in the vocabulary", where, k,
                     t < 2 ? "merge token" : "merged token", keys[t]);
        }
        merges_.prefetch(p.id[0], p.id[1]);
    }
}

void BpeModel::set_options(BpeOptions options, const std::string& where) {
    options_ = std::move(options);
    if (!options_.unk_token.empty()) {
        unk_id_ = vocab_.find(options_.unk_token);
        if (unk_id_ < 0)
            fail("{}: unk_token \"{}\" is not in the vocabulary", where, options_.unk_token);
    }
    all_byte_ids_ = true;
    for (int b = 0; b < 256; ++b) {
        byte_ids_[b] = vocab_.find(fmt::format("<0x{:02X}>", b));
        all_byte_ids_ = all_byte_ids_ && byte_ids_[b] >= 0;
    }
    bmp_ids_.assign(0x10000, -1);
    for (size_t id = 0; id < pieces_.size(); ++id) {
        const std::string_view s = id_to_token(static_cast<int32_t>(id));
        if (s.empty() || utf8::step(s, 0).length != s.size() || !utf8::step(s, 0).valid) continue;
        size_t i = 0;
        const uint32_t cp = utf8::decode(s, i);
        // The vocabulary map decides on duplicates (the later entry wins there).
        if (cp < 0x10000) bmp_ids_[cp] = vocab_.find(s);
    }
}

std::string_view BpeModel::id_to_token(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= pieces_.size() || !pieces_[id].present) return {};
    return std::string_view(arena_).substr(pieces_[id].offset, pieces_[id].length);
}

int32_t BpeModel::char_id(std::string_view ch) const {
    if (ch.size() <= 3) {
        size_t i = 0;
        return bmp_ids_[utf8::decode(ch, i)];
    }
    return vocab_.find(ch);
}

void BpeModel::split_symbols(std::string_view word, Scratch& scratch) const {
    auto& symbols = scratch.symbols;
    symbols.clear();
    const bool affixes =
        !options_.continuing_subword_prefix.empty() || !options_.end_of_word_suffix.empty();
    int32_t pending_unk = -1;  // unknown characters not yet emitted (fused when fuse_unk)
    auto push = [&](int32_t id) {
        const auto n = static_cast<int32_t>(symbols.size());
        symbols.push_back({id, n - 1, n + 1});
    };
    size_t i = 0;
    while (i < word.size()) {
        const size_t start = i;
        i += utf8::step(word, i).length;
        std::string_view ch = word.substr(start, i - start);
        int32_t id;
        if (affixes) {
            std::string& key = scratch.key;
            key.clear();
            if (start > 0) key += options_.continuing_subword_prefix;
            key.append(ch);
            if (i == word.size()) key += options_.end_of_word_suffix;
            id = vocab_.find(key);
            ch = key;
        } else {
            id = char_id(ch);
        }
        if (id >= 0) {
            if (pending_unk >= 0) push(pending_unk);
            pending_unk = -1;
            push(id);
            continue;
        }
        if (options_.byte_fallback && all_byte_ids_) {
            for (char c : ch) push(byte_ids_[static_cast<uint8_t>(c)]);
            continue;
        }
        if (unk_id_ < 0) continue;  // no unk token: the character is dropped
        if (pending_unk >= 0 && !options_.fuse_unk) push(pending_unk);
        pending_unk = unk_id_;
    }
    if (pending_unk >= 0) push(pending_unk);
    if (!symbols.empty()) symbols.back().next = -1;
}

void BpeModel::merge_symbols(Scratch& scratch) const {
    auto& sym = scratch.symbols;
    auto& heap = scratch.heap;
    heap.clear();
    auto consider = [&](int32_t pos) {
        const int32_t next = sym[pos].next;
        if (next < 0) return;
        if (const PairMap::Merge* m = merges_.find(sym[pos].id, sym[next].id)) {
            heap.push_back({m->rank, pos, sym[pos].id, sym[next].id});
            std::push_heap(heap.begin(), heap.end(), later);
        }
    };
    for (int32_t pos = 0; pos + 1 < static_cast<int32_t>(sym.size()); ++pos) consider(pos);
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), later);
        const Scratch::Candidate top = heap.back();
        heap.pop_back();
        auto& left = sym[top.pos];
        // Skip entries made stale by an earlier merge of either side.
        if (left.id != top.left || left.next < 0 || sym[left.next].id != top.right) continue;
        const int32_t right = left.next;
        left.id = merges_.find(top.left, top.right)->id;
        left.next = sym[right].next;
        sym[right].id = -1;
        if (left.next >= 0) sym[left.next].prev = top.pos;
        if (left.prev >= 0) consider(left.prev);
        consider(top.pos);
    }
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out, Scratch& scratch,
                           bool use_cache) const {
    if (word.empty()) return;
    if (options_.ignore_merges) {
        const int32_t whole = vocab_.find(word);
        if (whole >= 0) {
            out.push_back(whole);
            return;
        }
    }
    const bool cacheable = use_cache && word.size() < max_cached_word;
    if (cacheable) {
        const int32_t at = cache_.index.find(word);
        if (at >= 0) {
            const int32_t* p = cache_.ids.data() + at;
            out.insert(out.end(), p + 1, p + 1 + p[0]);
            return;
        }
    }
    split_symbols(word, scratch);
    if (scratch.symbols.size() > 1) merge_symbols(scratch);
    const size_t first = out.size();
    // Merging only ever removes the right symbol, so the first one is never removed.
    for (int32_t k = scratch.symbols.empty() ? -1 : 0; k >= 0; k = scratch.symbols[k].next)
        out.push_back(scratch.symbols[k].id);
    if (cacheable) {
        if (cache_.index.size() >= max_cached_words) {
            cache_.index.clear();
            cache_.ids.clear();
        }
        cache_.index.insert(word, static_cast<int32_t>(cache_.ids.size()));
        cache_.ids.push_back(static_cast<int32_t>(out.size() - first));
        cache_.ids.insert(cache_.ids.end(), out.begin() + static_cast<ptrdiff_t>(first), out.end());
    }
}

}  // namespace anelm
