// The BPE model of tokenizer.json: a vocabulary and ranked merges, applied to
// one pre-tokenized word at a time, lowest rank first and leftmost on ties.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/hash_tables.h"

namespace anelm {

// Merges as read from a file, in rank order: (left, right) strings in one arena.
class MergeList {
public:
    void add(std::string_view left, std::string_view right) {
        arena_.append(left);
        ends_.push_back(static_cast<uint32_t>(arena_.size()));
        arena_.append(right);
        ends_.push_back(static_cast<uint32_t>(arena_.size()));
    }
    size_t size() const { return ends_.size() / 2; }
    std::string_view left(size_t k) const { return part(2 * k); }
    std::string_view right(size_t k) const { return part(2 * k + 1); }

private:
    std::string_view part(size_t i) const {
        const uint32_t begin = i == 0 ? 0 : ends_[i - 1];
        return std::string_view(arena_).substr(begin, ends_[i] - begin);
    }
    std::string arena_;
    std::vector<uint32_t> ends_;
};

struct BpeOptions {
    std::string unk_token;  // empty: none
    bool fuse_unk = false;
    bool byte_fallback = false;
    bool ignore_merges = false;
    std::string continuing_subword_prefix;
    std::string end_of_word_suffix;
};

class BpeModel {
public:
    // Reusable buffers for encode_word, so encoding a word allocates nothing.
    struct Scratch {
        struct Symbol {
            int32_t id, prev, next;
        };
        struct Candidate {
            int32_t rank, pos, left, right;
        };
        std::vector<Symbol> symbols;
        std::vector<Candidate> heap;
        std::string key;
    };

    BpeModel() = default;
    BpeModel(const BpeModel&) = delete;
    BpeModel& operator=(const BpeModel&) = delete;

    // Building: all tokens, then the options, then the merges.
    void reserve(size_t n_tokens, size_t n_merges);
    void add_token(std::string_view token, int32_t id);
    void set_options(BpeOptions options, const std::string& where);
    // Resolves merges to ids; where names the merge list for errors.
    void add_merges(const MergeList& merges, const std::string& where);

    // Appends the ids of one word (a pre-token).
    void encode_word(std::string_view word, std::vector<int32_t>& out, Scratch& scratch,
                     bool use_cache) const;
    // The cache is shared by all threads: encode takes it for a whole call if it is free.
    std::mutex& cache_mutex() const { return cache_mutex_; }

    int32_t token_to_id(std::string_view token) const { return vocab_.find(token); }
    std::string_view id_to_token(int32_t id) const;  // empty when id is not in the vocabulary
    int32_t n_tokens() const { return static_cast<int32_t>(vocab_.size()); }
    int32_t max_id() const { return static_cast<int32_t>(pieces_.size()) - 1; }

private:
    void split_symbols(std::string_view word, Scratch& scratch) const;
    void merge_symbols(Scratch& scratch) const;
    int32_t char_id(std::string_view ch) const;

    StringMap vocab_;
    std::string arena_;
    struct PieceRef {
        uint32_t offset = 0, length = 0;
        bool present = false;
    };
    std::vector<PieceRef> pieces_;
    PairMap merges_;
    std::vector<int32_t> bmp_ids_;  // id of each single-character token below U+10000, or -1
    int32_t byte_ids_[256] = {};    // <0xXX> tokens for byte fallback, -1 when missing
    bool all_byte_ids_ = false;
    int32_t unk_id_ = -1;
    BpeOptions options_;

    struct WordCache {
        StringMap index;  // word -> offset in ids: [count, id, id, ...]
        std::vector<int32_t> ids;
    };
    mutable std::mutex cache_mutex_;
    mutable WordCache cache_;
};

}  // namespace anelm
