// AVX2 row kernels: normalisation, softmax, SiLU, GELU, rotary embedding, the
// delta rule's step and the F16C conversions (round to nearest even, as
// base/half.h).
#include "exec/cpu/kernels/delta_rule_step.h"
#include "exec/cpu/kernels/x86/avx2.h"

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
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                     _mm256_setzero_ps()};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        for (int j = 0; j < 4; ++j) {
            const __m256 v = _mm256_loadu_ps(x + i + 8 * j);
            acc[j] = _mm256_fmadd_ps(v, v, acc[j]);
        }
    }
    for (; i < n; i += 8) {
        const __m256 v = load_partial<DType::f32>(x + i, n - i < 8 ? n - i : 8);
        acc[0] = _mm256_fmadd_ps(v, v, acc[0]);
    }
    const float sum_sq =
        hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
    const float scale = 1.0f / __builtin_sqrtf(sum_sq / static_cast<float>(n) + eps);
    const __m256 vscale = _mm256_set1_ps(scale), offset = _mm256_set1_ps(gain_offset);
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), vscale);
        if (gain) v = _mm256_mul_ps(v, _mm256_add_ps(offset, _mm256_loadu_ps(gain + i)));
        _mm256_storeu_ps(y + i, v);
    }
    for (; i < n; ++i) y[i] = gain ? x[i] * scale * (gain_offset + gain[i]) : x[i] * scale;
}

float exp_sum(float* x, int64_t n) {
    __m256 vmax = _mm256_set1_ps(-__builtin_inff());
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + i));
    float max = hmax(vmax);
    for (; i < n; ++i) max = x[i] > max ? x[i] : max;
    const __m256 vm = _mm256_set1_ps(max);
    __m256 vsum = _mm256_setzero_ps();
    for (i = 0; i + 8 <= n; i += 8) {
        const __m256 e = vexp(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        _mm256_storeu_ps(x + i, e);
        vsum = _mm256_add_ps(vsum, e);
    }
    if (i < n) {
        const __m256 e = vexp(_mm256_sub_ps(load_partial<DType::f32>(x + i, n - i), vm));
        // Lanes past the row hold exp(-max): keep them out of the sum.
        const __m256 live = _mm256_castsi256_ps(_mm256_cmpgt_epi32(
            _mm256_set1_epi32(static_cast<int>(n - i)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
        vsum = _mm256_add_ps(vsum, _mm256_and_ps(e, live));
        store_partial(x + i, e, n - i);
    }
    return hsum(vsum);
}

void softmax(float* x, int64_t n) {
    if (n <= 0) return;
    const float inv = 1.0f / exp_sum(x, n);
    const __m256 vinv = _mm256_set1_ps(inv);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vinv));
    for (; i < n; ++i) x[i] *= inv;
}

namespace {

// out[i] = f(gate[i], up[i]) eight lanes at a time; only a short tail goes
// through the partial loads' buffers.
template <typename F>
void gated(const float* gate, const float* up, int64_t n, float* out, F f) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, f(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
    if (i < n) {
        const __m256 g = load_partial<DType::f32>(gate + i, n - i);
        store_partial(out + i, f(g, load_partial<DType::f32>(up + i, n - i)), n - i);
    }
}

}  // namespace

namespace {

// The vector layer delta_rule_step.h is written over.
struct Avx2Vec {
    using Reg = __m256;
    static constexpr int64_t lanes = 8;
    static Reg zero() { return _mm256_setzero_ps(); }
    static Reg set1(float f) { return _mm256_set1_ps(f); }
    static Reg load(const float* p) { return _mm256_loadu_ps(p); }
    static void store(float* p, Reg r) { _mm256_storeu_ps(p, r); }
    static Reg load_partial(const float* p, int64_t n) {
        return avx2::load_partial<DType::f32>(p, n);
    }
    static void store_partial(float* p, Reg r, int64_t n) { avx2::store_partial(p, r, n); }
    static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
    static Reg sub(Reg a, Reg b) { return _mm256_sub_ps(a, b); }
    static Reg fmadd(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
};

}  // namespace

void delta_rule_step(float* s, int64_t dk, int64_t dv, const float* q, const float* k,
                     const float* v, float beta, float decay, float* delta, float* o) {
    delta_rule_step_with<Avx2Vec>(s, dk, dv, q, k, v, beta, decay, delta, o);
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
    const __m256 one = _mm256_set1_ps(1.0f);
    gated(gate, up, n, out, [&](__m256 g, __m256 u) {
        const __m256 neg_g = _mm256_sub_ps(_mm256_setzero_ps(), g);
        return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, vexp(neg_g))), u);
    });
}

// 0.5 g (1 + tanh(u)) = g / (1 + e^(-2u)): one exponential, and saturation
// to g or 0 at large |u| without a separate tanh.
void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out) {
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 k2 = _mm256_set1_ps(-2.0f * 0.7978845608028654f);
    const __m256 c = _mm256_set1_ps(0.044715f);
    gated(gate, up, n, out, [&](__m256 g, __m256 u) {
        const __m256 inner = _mm256_fmadd_ps(_mm256_mul_ps(c, g), _mm256_mul_ps(g, g), g);
        const __m256 gelu = _mm256_div_ps(g, _mm256_add_ps(one, vexp(_mm256_mul_ps(k2, inner))));
        return _mm256_mul_ps(gelu, u);
    });
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
