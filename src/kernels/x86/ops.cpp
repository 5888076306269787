// AVX2 row kernels: normalisation, softmax, SiLU, GELU (vec_ops.h) and the
// delta rule's step (delta_rule_step.h) over the AVX2 vector layer; rotary
// embedding and the F16C conversions (round to nearest even, as base/half.h).
#include "kernels/delta_rule_step.h"
#include "kernels/vec_ops.h"
#include "kernels/x86/avx2.h"

namespace anelm::kernels::avx2 {

namespace {

constexpr int round_nearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// F16C turns a signalling NaN half into a quiet one; base/half.h keeps the
// payload as it is. Rebuild NaN lanes from the bits.
inline __m256 f16_to_f32_exact(__m128i h) {
    const __m256 converted = _mm256_cvtph_ps(h);
    const __m256i bits = _mm256_cvtepu16_epi32(h);
    const __m256i abs = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fff));
    const __m256i nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7c00));
    const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x8000)), 16);
    const __m256i payload = _mm256_slli_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x3ff)), 13);
    const __m256i exact =
        _mm256_or_si256(_mm256_or_si256(sign, payload), _mm256_set1_epi32(0x7f800000));
    return _mm256_blendv_ps(converted, _mm256_castsi256_ps(exact), _mm256_castsi256_ps(nan));
}

}  // namespace

void rms_norm(const float* x, const float* gain, float gain_offset, int64_t n, float eps,
              float* y) {
    VecOps<Vec>::rms_norm(x, gain, gain_offset, n, eps, y);
}

float exp_sum(float* x, int64_t n, float* max) {
    return VecOps<Vec>::exp_sum(x, n, max);
}

float softmax(float* x, int64_t n) {
    return VecOps<Vec>::softmax(x, n);
}

void sigmoid(const float* x, int64_t n, float* y) {
    VecOps<Vec>::sigmoid(x, n, y);
}

void delta_rule_step(float* s, int64_t dk, int64_t dv, const float* q, const float* k,
                     const float* v, float beta, float decay, float* delta, float* o) {
    delta_rule_step_with<Vec>(s, dk, dv, q, k, v, beta, decay, delta, o);
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
    VecOps<Vec>::silu_mul(gate, up, n, out);
}

void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out) {
    VecOps<Vec>::gelu_tanh_mul(gate, up, n, out);
}

void rope(float* x, int64_t n_heads, int64_t head_dim, const float* cos, const float* sin,
          bool interleaved) {
    const int64_t half = head_dim / 2;
    for (int64_t h = 0; h < n_heads; ++h) {
        float* head = x + h * head_dim;
        int64_t i = 0;
        if (interleaved) {
            // Four pairs per vector: even lanes a c - b s, odd lanes b c + a s.
            const __m256i dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
            for (; i + 4 <= half; i += 4) {
                const __m256 v = _mm256_loadu_ps(head + 2 * i);
                const __m256 c =
                    _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(cos + i)), dup);
                const __m256 s =
                    _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(sin + i)), dup);
                const __m256 swapped = _mm256_permute_ps(v, 0xb1);
                _mm256_storeu_ps(head + 2 * i, _mm256_fmaddsub_ps(v, c, _mm256_mul_ps(swapped, s)));
            }
            for (; i < half; ++i) {
                const float a = head[2 * i], b = head[2 * i + 1];
                head[2 * i] = a * cos[i] - b * sin[i];
                head[2 * i + 1] = a * sin[i] + b * cos[i];
            }
        } else {
            for (; i + 8 <= half; i += 8) {
                const __m256 a = _mm256_loadu_ps(head + i), b = _mm256_loadu_ps(head + half + i);
                const __m256 c = _mm256_loadu_ps(cos + i), s = _mm256_loadu_ps(sin + i);
                _mm256_storeu_ps(head + i, _mm256_fmsub_ps(a, c, _mm256_mul_ps(b, s)));
                _mm256_storeu_ps(head + half + i, _mm256_fmadd_ps(a, s, _mm256_mul_ps(b, c)));
            }
            for (; i < half; ++i) {
                const float a = head[i], b = head[half + i];
                head[i] = a * cos[i] - b * sin[i];
                head[half + i] = a * sin[i] + b * cos[i];
            }
        }
    }
}

void f32_to_f16_row(const float* x, int64_t n, uint16_t* y) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), round_nearest));
    }
    if (i < n) {
        alignas(16) uint16_t buffer[8];
        _mm_store_si128(reinterpret_cast<__m128i*>(buffer),
                        _mm256_cvtps_ph(load_partial<DType::f32>(x + i, n - i), round_nearest));
        std::memcpy(y + i, buffer, static_cast<size_t>(n - i) * sizeof(uint16_t));
    }
}

void f16_to_f32_row(const uint16_t* x, int64_t n, float* y) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
        _mm256_storeu_ps(y + i, f16_to_f32_exact(h));
    }
    if (i < n) {
        alignas(16) uint16_t buffer[8] = {};
        std::memcpy(buffer, x + i, static_cast<size_t>(n - i) * sizeof(uint16_t));
        const __m128i h = _mm_load_si128(reinterpret_cast<const __m128i*>(buffer));
        store_partial(y + i, f16_to_f32_exact(h), n - i);
    }
}

void round_to_f16_row(float* x, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), round_nearest);
        _mm256_storeu_ps(x + i, f16_to_f32_exact(h));
    }
    if (i < n) {
        const __m128i h = _mm256_cvtps_ph(load_partial<DType::f32>(x + i, n - i), round_nearest);
        store_partial(x + i, f16_to_f32_exact(h), n - i);
    }
}

}  // namespace anelm::kernels::avx2
