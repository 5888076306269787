// The CPU kernels the executor calls. Each entry dispatches at run time to the
// best path this processor has (AVX-512 or AVX2+FMA+F16C on x86-64, NEON on
// arm64) and has a scalar reference in namespace anelm::kernels::ref with the
// same signature.
// Activations are f32; weights stay in their storage dtype; accumulation is f32.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/dtype.h"
#include "base/thread_pool.h"

namespace anelm::kernels {

// A weight matrix in its storage dtype: f32 [n_out, n_in], row-major.
struct Matrix {
    DType dtype = DType::f32;  // f32, f16 or bf16
    const void* data = nullptr;
    int64_t n_out = 0;
    int64_t n_in = 0;
};

// The instruction set the dispatched kernels use: "avx512", "avx2", "neon" or
// "scalar". By default the best this processor runs, or the one the environment
// variable ANELM_ISA names (an error if this processor does not run it).
const char* active_isa();
// The instruction sets this processor runs, best first, "scalar" last.
std::vector<const char*> available_isas();
// Uses the named one of available_isas() from now on (for tests and
// comparisons); an empty name returns to the default. Throws for other names.
void use_isa(std::string_view name);
// Forces the scalar reference everywhere; false returns to the default.
void force_scalar(bool on);

// y[t, o] = sum_i x[t, i] * w[o, i] for t < n_tokens.
// x: f32 [n_tokens, n_in]; y: f32 [n_tokens, n_out]. Split across the pool.
void matmul(const Matrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);
// As matmul, for a matrix that is small or already in cache (rows just
// dequantized, an attention cache's keys): the GEMM takes over from fewer tokens.
void matmul_cached(const Matrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);
// ys[k][o] = sum_i x[i] * ws[k][o, i] for one token and matrices of one dtype
// and n_in: the product of their rows stacked, in one dispatch (each row's
// sum is the one matmul computes).
void matvec_stacked(const std::vector<Matrix>& ws, const float* x, const std::vector<float*>& ys,
                    ThreadPool& pool);

// y = x / sqrt(mean(x^2) + eps) * (gain_offset + gain), over one row of n values.
// A null gain means no gain (plain normalisation). Gemma uses gain_offset 1.
void rms_norm(const float* x, const float* gain, float gain_offset, int64_t n, float eps, float* y);

// In place: x = softmax(x) over n values (max-subtracted).
void softmax(float* x, int64_t n);

// out[s * width + j] = sum_t a[s * lda + t] * rows[t * width + j] for s < n_sets,
// t < n_rows, j < width: a few sets of weights over the same rows (attention's
// probabilities times its values), each row read once for up to four sets.
void weighted_rows(const float* a, int64_t n_sets, int64_t lda, const float* rows, int64_t n_rows,
                   int64_t width, float* out);

// y[i] = 1 / (1 + exp(-x[i])); y may be x.
void sigmoid(const float* x, int64_t n, float* y);

// out[i] = silu(gate[i]) * up[i]
void silu_mul(const float* gate, const float* up, int64_t n, float* out);

// out[i] = gelu_tanh(gate[i]) * up[i], the tanh approximation of GELU:
// 0.5 g (1 + tanh(sqrt(2 / pi) (g + 0.044715 g^3))).
void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out);

// Rotary embedding of one token's n_heads heads of head_dim values, in place.
// cos/sin hold head_dim / 2 values for this token's position. Pairs are
// (i, i + head_dim/2) unless interleaved, then (2i, 2i + 1).
void rope(float* x, int64_t n_heads, int64_t head_dim, const float* cos, const float* sin,
          bool interleaved);

void f32_to_f16_row(const float* x, int64_t n, uint16_t* y);
void f16_to_f32_row(const uint16_t* x, int64_t n, float* y);
// x[i] = the value x[i] becomes when stored as IEEE half (overflow to inf).
void round_to_f16_row(float* x, int64_t n);

// One token of the gated delta rule on one head's state s (dk rows of dv):
// s = decay s; delta = beta (v - s^T k); s += k delta^T; o = s^T q.
// delta is scratch for dv values.
void delta_rule_step(float* s, int64_t dk, int64_t dv, const float* q, const float* k,
                     const float* v, float beta, float decay, float* delta, float* o);

// One row of a KV cache (one head at one position) as int8: row[i] = zero + scale * q[i],
// scale and zero as bfloat16 bits. zero = the middle of the row's range, scale = the
// largest distance from it / 127 (rounded up, so every code fits in [-127, 127]); an
// all-equal row has scale 0.
void quantize_kv_row(const float* x, int64_t n, int8_t* q, uint16_t* scale, uint16_t* zero);

// Causal attention of a block of queries against a KV cache of f16 rows, or of
// int8 rows with a scale and zero each: int8 values with f16 or int8 keys.
struct AttentionArgs {
    const float* q = nullptr;            // f32 [n_tokens, n_head, head_dim]
    const uint16_t* k = nullptr;         // f16 [n_head_kv, n_ctx, head_dim]
    const uint16_t* v = nullptr;         // f16 [n_head_kv, n_ctx, head_dim]
    const int8_t* k_i8 = nullptr;        // in place of k: i8 [n_head_kv, n_ctx, head_dim]
    const uint16_t* k_scales = nullptr;  // with k_i8: bf16 [n_head_kv, n_ctx]
    const uint16_t* k_zeros = nullptr;   // with k_i8: bf16 [n_head_kv, n_ctx]
    const int8_t* v_i8 = nullptr;        // in place of v, as k_i8
    const uint16_t* v_scales = nullptr;
    const uint16_t* v_zeros = nullptr;
    float* out = nullptr;  // f32 [n_tokens, n_head, head_dim]
    int64_t n_tokens = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ctx = 0;
    int64_t pos0 = 0;  // query t sits at position pos0 + t and sees keys [0, pos0 + t]
    float scale = 1.0f;
    int64_t window = 0;       // > 0: query t sees only keys (pos0 + t - window, pos0 + t]
    float softcap = 0;        // > 0: scores become softcap * tanh(score / softcap)
    bool f16_scores = false;  // store scaled scores and probabilities as IEEE half
};
void attention(const AttentionArgs& args, ThreadPool& pool);
// Several independent calls (one per sequence of a batch) in one dispatch.
void attention_batch(std::span<const AttentionArgs> calls, ThreadPool& pool);
// How many chunks attention cuts each query's keys into on `threads` threads,
// merging their softmaxes after (1: none). Only calls with fewer (token, kv
// head) groups than twice the threads and long enough keys are cut.
int64_t attention_key_chunks(const AttentionArgs& args, int64_t threads);
// How many tokens each of attention's prompt tasks takes together against one
// kv head (0: tasks of one token), so that a key row is read once per block.
int64_t attention_query_block(const AttentionArgs& args, int64_t threads);

// The scalar references: plain loops, the definition the SIMD paths are tested against.
namespace ref {
void matmul(const Matrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);
// ys[k][o] = sum_i x[i] * ws[k][o, i] for one token and matrices of one dtype
// and n_in: the product of their rows stacked, in one dispatch (each row's
// sum is the one matmul computes).
void matvec_stacked(const std::vector<Matrix>& ws, const float* x, const std::vector<float*>& ys,
                    ThreadPool& pool);
void rms_norm(const float* x, const float* gain, float gain_offset, int64_t n, float eps, float* y);
void softmax(float* x, int64_t n);
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
void attention(const AttentionArgs& args, ThreadPool& pool);
}  // namespace ref

}  // namespace anelm::kernels
