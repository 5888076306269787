// The AVX2 + FMA + F16C leaves, declared without intrinsics so that the leaf
// tables of other instruction sets can point at them (x86_512/isa.cpp) without
// sharing any inline code compiled with other flags.
#pragma once

#include <cstdint>

#include "kernels/isa.h"

namespace anelm::kernels::avx2 {

// Leaves, in matmul.cpp, ops.cpp and attention.cpp.
void pack_panel(const Matrix& w, int64_t o0, int64_t n_rows, int64_t k0, int64_t kc, float* panel);
void gemm_tile(const float* xp, int64_t m, const float* panel, int64_t kc, float* y, int64_t ldy,
               int64_t n, bool accumulate);
void gemv(const Matrix& w, const float* x, int64_t n_tokens, int64_t o0, int64_t o1, float* y,
          int64_t ldy);
void attend(const float* q, int64_t n_q, const uint16_t* k, const uint16_t* v, int64_t n_keys,
            int64_t head_dim, float scale, float* scores, float* out, float* lse);
void attend_q8(const float* q, int64_t n_q, KvRows k, KvRows v, int64_t n_keys, int64_t head_dim,
               float scale, float* scores, float* out, float* lse);
void rms_norm(const float* x, const float* gain, float gain_offset, int64_t n, float eps, float* y);
float softmax(float* x, int64_t n);
void weighted_rows(const float* a, int64_t n_sets, int64_t lda, const float* rows, int64_t n_rows,
                   int64_t width, float* out);
void sigmoid(const float* x, int64_t n, float* y);
void silu_mul(const float* gate, const float* up, int64_t n, float* out);
void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out);
void rope(float* x, int64_t n_heads, int64_t head_dim, const float* cos, const float* sin,
          bool interleaved);
void f32_to_f16_row(const float* x, int64_t n, uint16_t* y);
void f16_to_f32_row(const uint16_t* x, int64_t n, float* y);
void round_to_f16_row(float* x, int64_t n);
void delta_rule_step(float* s, int64_t dk, int64_t dv, const float* q, const float* k,
                     const float* v, float beta, float decay, float* delta, float* o);

// x[i] = exp(x[i] - max(x)) over n > 0 values; returns their sum.
float exp_sum(float* x, int64_t n, float* max);

// Tile shape of gemm_tile and rows of the gemv token groups.
constexpr int mr = 6;
constexpr int nr = 16;
constexpr int gemv_tokens = 4;

}  // namespace anelm::kernels::avx2
