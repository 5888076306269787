#include "tokenizer/hash_tables.h"

#include <algorithm>
#include <cstring>

namespace anelm {

uint64_t hash_bytes(std::string_view s) {
    // 8 bytes at a time with a multiply-xorshift mix: fast on the short keys
    // (words, tokens) that dominate.
    constexpr uint64_t m = 0x9E3779B97F4A7C15ULL;
    uint64_t h = s.size() * m;
    const char* p = s.data();
    size_t n = s.size();
    while (n >= 8) {
        uint64_t w;
        std::memcpy(&w, p, 8);
        h = (h ^ w) * m;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    if (n > 0) {
        uint64_t w = 0;
        std::memcpy(&w, p, n);
        h = (h ^ w) * m;
        h ^= h >> 29;
    }
    h *= 0xBF58476D1CE4E5B9ULL;
    return h ^ (h >> 31);
}

void StringMap::reserve(size_t n) {
    size_t want = 16;
    while (want < n * 2) want *= 2;
    if (want <= slots_.size()) return;
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(want, Slot{});
    const size_t mask = want - 1;
    for (const Slot& s : old) {
        if (s.tag == 0) continue;
        size_t i = home(s.tag);
        while (slots_[i].tag != 0) i = (i + 1) & mask;
        slots_[i] = s;
    }
}

void StringMap::grow() {
    reserve(slots_.empty() ? 8 : slots_.size());
}

void StringMap::insert(std::string_view key, int32_t value) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const uint32_t tag = tag_of(hash_bytes(key));
    const size_t mask = slots_.size() - 1;
    for (size_t i = home(tag);; i = (i + 1) & mask) {
        Slot& s = slots_[i];
        if (s.tag == 0) {
            s = Slot{static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(key.size()), tag,
                     value};
            arena_.append(key);
            ++size_;
            return;
        }
        if (s.tag == tag && std::string_view(arena_).substr(s.offset, s.length) == key) {
            s.value = value;
            return;
        }
    }
}

void StringMap::prefetch_slot(uint64_t hash) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[home(tag_of(hash))]);
}

void StringMap::prefetch_key(uint64_t hash) const {
    if (slots_.empty()) return;
    const uint32_t tag = tag_of(hash);
    const size_t mask = slots_.size() - 1;
    for (size_t i = home(tag);; i = (i + 1) & mask) {
        const Slot& s = slots_[i];
        if (s.tag == 0) return;
        if (s.tag == tag) {
            __builtin_prefetch(arena_.data() + s.offset);
            return;
        }
    }
}

int32_t StringMap::find(std::string_view key, uint64_t hash) const {
    if (slots_.empty()) return -1;
    const uint32_t tag = tag_of(hash);
    const size_t mask = slots_.size() - 1;
    for (size_t i = home(tag);; i = (i + 1) & mask) {
        const Slot& s = slots_[i];
        if (s.tag == 0) return -1;
        if (s.tag == tag && s.length == key.size() &&
            std::memcmp(arena_.data() + s.offset, key.data(), key.size()) == 0)
            return s.value;
    }
}

void StringMap::clear() {
    arena_.clear();
    std::fill(slots_.begin(), slots_.end(), Slot{});
    size_ = 0;
}

void PairMap::reserve(size_t n) {
    size_t want = 16;
    while (want * 2 < n * 3) want *= 2;
    if (want <= slots_.size()) return;
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(want, Slot{});
    mask_ = want - 1;
    for (const Slot& s : old) {
        if (s.key == empty) continue;
        size_t i = mix(s.key) & mask_;
        while (slots_[i].key != empty) i = (i + 1) & mask_;
        slots_[i] = s;
    }
}

void PairMap::grow() {
    reserve(slots_.empty() ? 8 : slots_.size());
}

void PairMap::insert(int32_t left, int32_t right, Merge merge) {
    if ((size_ + 1) * 3 > slots_.size() * 2) grow();
    const uint64_t key = pack(left, right);
    for (size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
        Slot& s = slots_[i];
        if (s.key == key) {
            s.merge = merge;
            return;
        }
        if (s.key == empty) {
            s = Slot{key, merge};
            ++size_;
            return;
        }
    }
}

}  // namespace anelm
