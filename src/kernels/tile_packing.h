// What the blocked GEMM callers of isa.h's tiles (matmul.cpp, attention.cpp)
// share: aligned per-thread scratch and tokens packed into tiles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace anelm::kernels {

// A 64-byte aligned view of n_floats in a per-thread buffer.
inline float* aligned_scratch(std::vector<float>& buffer, int64_t n_floats) {
    const auto size = static_cast<size_t>(n_floats) + 16;
    if (buffer.size() < size) buffer.resize(size);
    const auto addr = reinterpret_cast<uintptr_t>(buffer.data());
    return buffer.data() + ((64 - addr % 64) % 64) / sizeof(float);
}

// xp[k * mr + t] = x[t * n_in + k] for t < m, zero for m <= t < mr: one tile
// of tokens, interleaved.
inline void pack_tokens(const float* x, int64_t n_in, int64_t m, int64_t mr, float* xp) {
    for (int64_t k = 0; k < n_in; ++k) {
        for (int64_t t = 0; t < mr; ++t) xp[k * mr + t] = t < m ? x[t * n_in + k] : 0.0f;
    }
}

}  // namespace anelm::kernels
