// Rows of an int8 KV cache: codes around the middle of each row's range, one
// scale and zero per row, so a row written once never changes and rewinding or
// copying a cache needs nothing more. Centring on the range rather than on 0
// halves the step of rows whose values share an offset, as the slowly turning
// rotary pairs of a head's keys do.
#include <algorithm>
#include <cmath>

#include "base/half.h"
#include "kernels/kernels.h"

namespace anelm::kernels {

void quantize_kv_row(const float* x, int64_t n, int8_t* q, uint16_t* scale, uint16_t* zero) {
    float lo = n > 0 ? x[0] : 0.0f, hi = lo;
    for (int64_t i = 0; i < n; ++i) {
        lo = std::min(lo, x[i]);
        hi = std::max(hi, x[i]);
    }
    // The codes are rounded against the stored zero and scale, so storing
    // them as bfloat16 costs only a slightly larger step.
    *zero = f32_to_bf16(lo + (hi - lo) / 2);
    const float middle = bf16_to_f32(*zero);
    const float reach = std::max(hi - middle, middle - lo);
    *scale = f32_to_bf16(reach / 127.0f);
    if (bf16_to_f32(*scale) < reach / 127.0f) ++*scale;  // round up: codes stay in 127
    const float step = bf16_to_f32(*scale);
    const float inv = step > 0 ? 1.0f / step : 0.0f;
    for (int64_t i = 0; i < n; ++i) {
        const float c = std::nearbyint((x[i] - middle) * inv);
        q[i] = static_cast<int8_t>(std::clamp(c, -127.0f, 127.0f));
    }
}

}  // namespace anelm::kernels
