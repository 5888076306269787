#include <algorithm>
#include <cmath>
#include <numbers>

#include "base/error.h"
#include "models/models.h"

namespace anelm {

std::vector<float> rope_inv_freq(const ModelSpec& spec) {
    // Gemma 4's table is its full layers', whose heads are global_head_dim wide.
    const int64_t head = spec.global_head_dim > 0 ? spec.global_head_dim : spec.head_dim;
    const int64_t dims = spec.rope_dims > 0 ? spec.rope_dims : head;
    const int64_t half = dims / 2;
    // "Proportional" rope turns only the first frequencies (Hugging Face's
    // int(fraction * head_dim // 2)); the rest are zero, leaving their pairs as they are.
    const auto turning =
        std::min(half, static_cast<int64_t>(
                           std::floor(spec.rope_global_fraction * static_cast<double>(dims) / 2)));
    std::vector<float> inv_freq(static_cast<size_t>(half), 0.0f);
    for (int64_t i = 0; i < turning; ++i) {
        // Hugging Face: 1 / base ** (arange(0, dim, 2) / dim), in float32.
        const float exponent = static_cast<float>(2 * i) / static_cast<float>(dims);
        inv_freq[i] = 1.0f / std::pow(static_cast<float>(spec.rope_theta), exponent);
    }
    const RopeScaling& s = spec.rope_scaling;
    switch (s.type) {
        case RopeScaling::Type::none:
            break;
        case RopeScaling::Type::linear:
            for (float& f : inv_freq) f = static_cast<float>(f / s.factor);
            break;
        case RopeScaling::Type::llama3: {
            // Long wavelengths are divided by factor, short ones kept, and the
            // band between blended smoothly (transformers' llama3 rope init).
            const double old_ctx = static_cast<double>(s.original_max_position_embeddings);
            const double low_freq_wavelen = old_ctx / s.low_freq_factor;
            const double high_freq_wavelen = old_ctx / s.high_freq_factor;
            for (float& f : inv_freq) {
                const double wavelen = 2 * std::numbers::pi / f;
                if (wavelen > low_freq_wavelen) {
                    f = static_cast<float>(f / s.factor);
                } else if (wavelen >= high_freq_wavelen) {
                    const double smooth = (old_ctx / wavelen - s.low_freq_factor) /
                                          (s.high_freq_factor - s.low_freq_factor);
                    f = static_cast<float>((1 - smooth) * f / s.factor + smooth * f);
                }
            }
            break;
        }
    }
    if (!s.freq_factors.empty()) {
        if (s.freq_factors.size() != inv_freq.size())
            fail("{}: {} rope frequency factors for {} frequencies", spec.source,
                 s.freq_factors.size(), inv_freq.size());
        for (size_t i = 0; i < inv_freq.size(); ++i) inv_freq[i] /= s.freq_factors[i];
    }
    return inv_freq;
}

}  // namespace anelm
