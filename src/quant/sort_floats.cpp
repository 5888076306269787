#include "quant/sort_floats.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

namespace anelm::quant {

namespace {

// Unsigned keys in the order of the floats: negatives flipped entirely,
// positives with the sign bit set.
uint32_t to_key(float f) {
    const auto u = std::bit_cast<uint32_t>(f);
    return u & 0x80000000u ? ~u : u | 0x80000000u;
}

float from_key(uint32_t k) {
    return std::bit_cast<float>(k & 0x80000000u ? k & 0x7fffffffu : ~k);
}

}  // namespace

void sort_floats(std::span<float> values) {
    const size_t n = values.size();
    if (n < 256) {
        std::sort(values.begin(), values.end());
        return;
    }
    thread_local std::vector<uint32_t> keys, spare;
    keys.resize(n);
    spare.resize(n);
    uint32_t differing = 0;
    for (size_t i = 0; i < n; ++i) {
        keys[i] = to_key(values[i]);
        differing |= keys[i] ^ keys[0];
    }
    for (int shift = 0; shift < 32; shift += 8) {
        if (((differing >> shift) & 0xffu) == 0) continue;
        std::array<size_t, 256> start{};
        for (uint32_t k : keys) ++start[(k >> shift) & 0xffu];
        size_t sum = 0;
        for (size_t& s : start) sum += std::exchange(s, sum);
        for (uint32_t k : keys) spare[start[(k >> shift) & 0xffu]++] = k;
        keys.swap(spare);
    }
    for (size_t i = 0; i < n; ++i) values[i] = from_key(keys[i]);
}

}  // namespace anelm::quant
