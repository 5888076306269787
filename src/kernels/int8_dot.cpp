// The rounding that integer dot products share across leaves: tables and
// blocks of inputs to int8, one scale each.
#include <algorithm>
#include <cmath>

#include "base/half.h"
#include "kernels/quant_kernels.h"

namespace anelm::kernels {

float round_to_int8(const float* v, int64_t n, int8_t* q, int limit) {
    float max_abs = 0.0f;
    bool finite = true;
    for (int64_t i = 0; i < n; ++i) {
        finite &= std::isfinite(v[i]);
        max_abs = std::max(max_abs, std::fabs(v[i]));
    }
    if (!finite) {
        std::fill(q, q + n, int8_t{0});
        return NAN;
    }
    const auto top = static_cast<float>(limit);
    const float inverse = max_abs > 0.0f ? top / max_abs : 0.0f;
    // Adding and taking away 1.5 * 2^23 rounds |y| < 2^22 to an integer, ties
    // to even, as nearbyint does in the default rounding mode; unlike a call
    // to nearbyint it vectorizes.
    constexpr float round_shift = 12582912.0f;
    for (int64_t i = 0; i < n; ++i) {
        const float y = v[i] * inverse;
        q[i] = static_cast<int8_t>(static_cast<int32_t>((y + round_shift) - round_shift));
    }
    return max_abs / top;
}

bool int8_dot_applies(const QuantMatrix& w) {
    if (!w.int8_dot || w.n_in % int8_block != 0) return false;
    if (w.kind != QuantKind::lut) return true;
    return (w.nbits == 4 || w.nbits == 6) && w.dot_lut && w.dot_scale;
}

void round_tables_to_int8(const uint16_t* lut, int64_t n_tables, int nbits, int8_t* entries,
                          float* scales) {
    const int64_t n = int64_t{1} << nbits;
    float table[256];
    for (int64_t g = 0; g < n_tables; ++g) {
        for (int64_t e = 0; e < n; ++e) table[e] = f16_to_f32(lut[g * n + e]);
        scales[g] = round_to_int8(table, n, entries + g * n, int8_table_limit(nbits));
    }
}

}  // namespace anelm::kernels
