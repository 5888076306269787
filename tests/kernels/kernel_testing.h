// Random data and tolerant comparisons for the kernel tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "base/half.h"
#include "kernels/kernels.h"

namespace anelm::test {

inline std::vector<float> random_floats(std::mt19937& rng, int64_t n, float lo = -1.0f,
                                        float hi = 1.0f) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = dist(rng);
    return v;
}

inline std::vector<uint16_t> to_f16(const std::vector<float>& v) {
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = f32_to_f16(v[i]);
    return h;
}

inline std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = f32_to_bf16(v[i]);
    return h;
}

// Each value within rel_tol of the reference, relative to the largest
// reference magnitude (sums of mixed signs cancel, so per-element relative
// error is meaningless near zero).
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                         float rel_tol, const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    float scale = 0.0f;
    for (float w : want) scale = std::max(scale, std::abs(w));
    const float tol = rel_tol * std::max(scale, 1e-30f);
    for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], tol) << what << " at " << i;
    }
}

// Runs body(name) once with each instruction set this processor runs selected,
// the scalar reference last, then returns to the default choice.
template <class Body>
void for_each_isa(Body&& body) {
    struct Restore {
        ~Restore() { kernels::use_isa(""); }
    } restore;
    for (const char* isa : kernels::available_isas()) {
        SCOPED_TRACE(isa);
        kernels::use_isa(isa);
        body(isa);
    }
}

}  // namespace anelm::test
