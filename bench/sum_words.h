// The plain read the benchmarks compare their kernels with: words summed in
// four independent chains, so the loop runs at the memory's rate.
#pragma once

#include <cstdint>

namespace anelm {

inline uint64_t sum_words(const uint64_t* p, int64_t begin, int64_t end) {
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int64_t i = begin; i + 4 <= end; i += 4) {
        s0 += p[i];
        s1 += p[i + 1];
        s2 += p[i + 2];
        s3 += p[i + 3];
    }
    return s0 + s1 + s2 + s3;
}

}  // namespace anelm
