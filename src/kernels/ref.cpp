// The scalar reference of every kernel: the simplest correct loops.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "base/half.h"
#include "kernels/isa.h"

namespace anelm::kernels::ref {

namespace {

// w[o, :] as f32.
void weight_row(const Matrix& w, int64_t o, float* row) {
    const int64_t base = o * w.n_in;
    for (int64_t i = 0; i < w.n_in; ++i) {
        switch (w.dtype) {
            case DType::f16:
                row[i] = f16_to_f32(static_cast<const uint16_t*>(w.data)[base + i]);
                break;
            case DType::bf16:
                row[i] = bf16_to_f32(static_cast<const uint16_t*>(w.data)[base + i]);
                break;
            default:
                row[i] = static_cast<const float*>(w.data)[base + i];
                break;
        }
    }
}

}  // namespace

void matmul(const Matrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
    check_matrix(w);
    constexpr int64_t rows_per_task = 16;
    pool.run((w.n_out + rows_per_task - 1) / rows_per_task, [&](int64_t task, int) {
        std::vector<float> row(static_cast<size_t>(w.n_in));
        const int64_t o_end = std::min(w.n_out, (task + 1) * rows_per_task);
        for (int64_t o = task * rows_per_task; o < o_end; ++o) {
            weight_row(w, o, row.data());
            for (int64_t t = 0; t < n_tokens; ++t) {
                float sum = 0.0f;
                for (int64_t i = 0; i < w.n_in; ++i) sum += x[t * w.n_in + i] * row[i];
                y[t * w.n_out + o] = sum;
            }
        }
    });
}

void rms_norm(const float* x, const float* gain, float gain_offset, int64_t n, float eps,
              float* y) {
    float sum_sq = 0.0f;
    for (int64_t i = 0; i < n; ++i) sum_sq += x[i] * x[i];
    const float scale = 1.0f / std::sqrt(sum_sq / static_cast<float>(n) + eps);
    for (int64_t i = 0; i < n; ++i) {
        y[i] = gain ? x[i] * scale * (gain_offset + gain[i]) : x[i] * scale;
    }
}

void softmax(float* x, int64_t n) {
    if (n <= 0) return;
    const float max = *std::max_element(x, x + n);
    float sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
        x[i] = std::exp(x[i] - max);
        sum += x[i];
    }
    const float inv = 1.0f / sum;
    for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void weighted_rows(const float* a, int64_t n_sets, int64_t lda, const float* rows, int64_t n_rows,
                   int64_t width, float* out) {
    for (int64_t s = 0; s < n_sets; ++s)
        for (int64_t j = 0; j < width; ++j) {
            float sum = 0.0f;
            for (int64_t t = 0; t < n_rows; ++t) sum += a[s * lda + t] * rows[t * width + j];
            out[s * width + j] = sum;
        }
}

void sigmoid(const float* x, int64_t n, float* y) {
    for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
}

void delta_rule_step(float* s, int64_t dk, int64_t dv, const float* q, const float* k,
                     const float* v, float beta, float decay, float* delta, float* o) {
    std::fill(delta, delta + dv, 0.0f);
    for (int64_t i = 0; i < dk; ++i) {
        float* si = s + i * dv;
        for (int64_t j = 0; j < dv; ++j) {
            si[j] *= decay;
            delta[j] += si[j] * k[i];
        }
    }
    for (int64_t j = 0; j < dv; ++j) delta[j] = beta * (v[j] - delta[j]);
    std::fill(o, o + dv, 0.0f);
    for (int64_t i = 0; i < dk; ++i) {
        float* si = s + i * dv;
        for (int64_t j = 0; j < dv; ++j) {
            si[j] += k[i] * delta[j];
            o[j] += si[j] * q[i];
        }
    }
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
    for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out) {
    const float k = std::sqrt(2.0f / std::numbers::pi_v<float>);
    for (int64_t i = 0; i < n; ++i) {
        const float g = gate[i];
        out[i] = 0.5f * g * (1.0f + std::tanh(k * (g + 0.044715f * g * g * g))) * up[i];
    }
}

void rope(float* x, int64_t n_heads, int64_t head_dim, const float* cos, const float* sin,
          bool interleaved) {
    const int64_t half = head_dim / 2;
    for (int64_t h = 0; h < n_heads; ++h) {
        float* head = x + h * head_dim;
        for (int64_t i = 0; i < half; ++i) {
            float& a = interleaved ? head[2 * i] : head[i];
            float& b = interleaved ? head[2 * i + 1] : head[i + half];
            const float a0 = a, b0 = b;
            a = a0 * cos[i] - b0 * sin[i];
            b = a0 * sin[i] + b0 * cos[i];
        }
    }
}

void f32_to_f16_row(const float* x, int64_t n, uint16_t* y) {
    for (int64_t i = 0; i < n; ++i) y[i] = f32_to_f16(x[i]);
}

void f16_to_f32_row(const uint16_t* x, int64_t n, float* y) {
    for (int64_t i = 0; i < n; ++i) y[i] = f16_to_f32(x[i]);
}

void round_to_f16_row(float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] = round_to_f16(x[i]);
}

void attention(const AttentionArgs& a, ThreadPool& pool) {
    check_attention(a);
    const int64_t group = a.n_head / a.n_head_kv;
    pool.run(a.n_tokens * a.n_head, [&](int64_t task, int) {
        const int64_t t = task / a.n_head, h = task % a.n_head;
        const float* q = a.q + task * a.head_dim;
        const int64_t k0 = first_key(a, t);
        const int64_t n_keys = a.pos0 + t + 1 - k0;
        const int64_t row0 = (h / group) * a.n_ctx + k0;  // of key j = 0
        // Element d of row j of the keys or values, f16 or zero + scale * int8 code.
        auto element = [&](const uint16_t* f16, const int8_t* i8, const uint16_t* scales,
                           const uint16_t* zeros, int64_t j, int64_t d) {
            const int64_t row = row0 + j;
            return i8 ? bf16_to_f32(zeros[row]) +
                            bf16_to_f32(scales[row]) * i8[row * a.head_dim + d]
                      : f16_to_f32(f16[row * a.head_dim + d]);
        };
        std::vector<float> p(static_cast<size_t>(n_keys));
        for (int64_t j = 0; j < n_keys; ++j) {
            float dot = 0.0f;
            for (int64_t d = 0; d < a.head_dim; ++d)
                dot += q[d] * element(a.k, a.k_i8, a.k_scales, a.k_zeros, j, d);
            p[j] = dot * a.scale;
            if (a.softcap > 0) p[j] = a.softcap * std::tanh(p[j] / a.softcap);
        }
        if (a.f16_scores) round_to_f16_row(p.data(), n_keys);
        softmax(p.data(), n_keys);
        if (a.f16_scores) round_to_f16_row(p.data(), n_keys);
        float* out = a.out + task * a.head_dim;
        for (int64_t d = 0; d < a.head_dim; ++d) {
            float sum = 0.0f;
            for (int64_t j = 0; j < n_keys; ++j)
                sum += p[j] * element(a.v, a.v_i8, a.v_scales, a.v_zeros, j, d);
            out[d] = sum;
        }
    });
}

}  // namespace anelm::kernels::ref
