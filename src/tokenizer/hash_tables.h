// Open-addressing hash tables for the tokenizers' hot paths: byte strings to
// ids (vocabularies, the word cache) and id pairs to merges. Keys live in one
// arena, so building and probing allocate nothing per entry.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace anelm {

uint64_t hash_bytes(std::string_view s);

class StringMap {
public:
    void reserve(size_t n);
    // Sets key's value (a later insert of the same key replaces the value).
    void insert(std::string_view key, int32_t value);
    int32_t find(std::string_view key) const { return find(key, hash_bytes(key)); }  // -1: absent
    // Batched lookups (loading hundreds of thousands of merges is bound by cache
    // misses): hash first, prefetch the slot, later the key bytes, then find.
    int32_t find(std::string_view key, uint64_t hash) const;
    void prefetch_slot(uint64_t hash) const;
    void prefetch_key(uint64_t hash) const;
    size_t size() const { return size_; }
    size_t arena_bytes() const { return arena_.size(); }
    void clear();

private:
    struct Slot {
        uint32_t offset = 0;
        uint32_t length = 0;
        uint32_t tag = 0;  // high hash bits; 0 marks an empty slot
        int32_t value = -1;
    };
    static uint32_t tag_of(uint64_t h) { return static_cast<uint32_t>(h >> 32) | 1u; }
    // The home slot comes from the tag alone, so growing never rehashes keys.
    size_t home(uint32_t tag) const { return (tag * 0x9E3779B1u) & (slots_.size() - 1); }
    void grow();

    std::string arena_;
    std::vector<Slot> slots_;
    size_t size_ = 0;
};

// (left id, right id) -> (rank, merged id).
class PairMap {
public:
    struct Merge {
        int32_t rank;
        int32_t id;
    };
    void reserve(size_t n);
    void insert(int32_t left, int32_t right, Merge merge);
    void prefetch(int32_t left, int32_t right) const {
        if (!slots_.empty()) __builtin_prefetch(&slots_[mix(pack(left, right)) & mask_]);
    }
    const Merge* find(int32_t left, int32_t right) const {
        if (slots_.empty()) return nullptr;
        const uint64_t key = pack(left, right);
        for (size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.key == key) return &s.merge;
            if (s.key == empty) return nullptr;
        }
    }
    size_t size() const { return size_; }

private:
    static constexpr uint64_t empty = ~uint64_t{0};
    struct Slot {
        uint64_t key = empty;
        Merge merge{};
    };
    static uint64_t pack(int32_t a, int32_t b) {
        return (uint64_t{static_cast<uint32_t>(a)} << 32) | static_cast<uint32_t>(b);
    }
    static uint64_t mix(uint64_t k) {
        k ^= k >> 33;
        k *= 0xff51afd7ed558ccdULL;
        k ^= k >> 33;
        return k;
    }
    void grow();

    std::vector<Slot> slots_;
    size_t mask_ = 0;
    size_t size_ = 0;
};

}  // namespace anelm
