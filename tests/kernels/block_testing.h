// Random ggml block matrices for the block kernels' tests and benchmarks.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "base/half.h"
#include "kernels/block_kernels.h"

namespace anelm::test {

// Every block type, with the byte offsets of its blocks' f16 scales (d, then
// dmin or m where the type has one): the rest of a block may be any bytes.
struct BlockTypeCase {
    kernels::BlockType type;
    const char* name;
    std::vector<int> f16_fields;
};

inline const std::vector<BlockTypeCase>& block_type_cases() {
    using kernels::BlockType;
    static const std::vector<BlockTypeCase> cases = {
        {BlockType::q4_0, "Q4_0", {0}},     {BlockType::q4_1, "Q4_1", {0, 2}},
        {BlockType::q5_0, "Q5_0", {0}},     {BlockType::q5_1, "Q5_1", {0, 2}},
        {BlockType::q8_0, "Q8_0", {0}},     {BlockType::q2_k, "Q2_K", {80, 82}},
        {BlockType::q3_k, "Q3_K", {108}},   {BlockType::q4_k, "Q4_K", {0, 2}},
        {BlockType::q5_k, "Q5_K", {0, 2}},  {BlockType::q6_k, "Q6_K", {208}},
        {BlockType::iq4_nl, "IQ4_NL", {0}},
    };
    return cases;
}

// n_out rows of n_in inputs of random blocks: any codes; d (and dmin, m) of
// either sign for the 32-input types (Q4_0's quantizer makes d negative half
// the time), positive for the K types, mins the size of the scaled codes so
// that they matter.
inline std::vector<uint8_t> random_blocks(std::mt19937& rng, const BlockTypeCase& c, int64_t n_out,
                                          int64_t n_in) {
    const kernels::BlockLayout l = kernels::block_layout(c.type);
    std::vector<uint8_t> bytes(static_cast<size_t>(n_out * (n_in / l.elems) * l.bytes));
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    std::uniform_real_distribution<float> mag(0.25f, 1.0f);
    const bool k = l.elems == 256;
    for (size_t b = 0; b < bytes.size(); b += static_cast<size_t>(l.bytes)) {
        for (size_t f = 0; f < c.f16_fields.size(); ++f) {
            const float sign = !k && rng() % 2 ? -1.0f : 1.0f;
            // Q4_1/Q5_1's m is a value, of the size of 8 codes times d.
            const float size = !k && f == 1 ? 8.0f / 32 : 1.0f / 32;
            const uint16_t h = f32_to_f16(sign * mag(rng) * size);
            const size_t at = b + static_cast<size_t>(c.f16_fields[f]);
            bytes[at] = static_cast<uint8_t>(h);
            bytes[at + 1] = static_cast<uint8_t>(h >> 8);
        }
    }
    return bytes;
}

}  // namespace anelm::test
