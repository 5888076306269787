// Rows of an int8 KV cache: symmetric, one scale per row, so a row written
// once never changes and rewinding or copying a cache needs nothing more.
#include <cmath>

#include "kernels/kernels.h"

namespace anelm::kernels {

void quantize_kv_row(const float* x, int64_t n, int8_t* q, float* scale) {
    float peak = 0;
    for (int64_t i = 0; i < n; ++i) peak = std::max(peak, std::fabs(x[i]));
    *scale = peak / 127.0f;
    const float inv = peak > 0 ? 127.0f / peak : 0.0f;
    for (int64_t i = 0; i < n; ++i) q[i] = static_cast<int8_t>(std::nearbyint(x[i] * inv));
}

}  // namespace anelm::kernels
