// The leaf kernels each instruction set provides behind kernels.h. Leaves work
// on raw rows: they never allocate, never throw and never see the thread pool,
// so threading and blocking stay portable (matmul.cpp, attention.cpp) and the
// files compiled with ISA flags share no inline code with portable ones.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace anelm::kernels {

// One kv head's rows [n_keys, head_dim] in the cache: f16 (i8 null), or int8
// with a scale and zero per row.
struct KvRows {
    const uint16_t* f16 = nullptr;
    const int8_t* i8 = nullptr;
    const uint16_t* scales = nullptr;  // bf16, as the zeros
    const uint16_t* zeros = nullptr;
};

struct Isa {
    const char* name;

    // GEMM: a tile of mr tokens by nr outputs against a packed weight panel.
    int mr;
    int nr;
    // panel[k * nr + r] = w[o0 + r, k0 + k] as f32 for k < kc; zero for r >= n_rows.
    void (*pack_panel)(const Matrix& w, int64_t o0, int64_t n_rows, int64_t k0, int64_t kc,
                       float* panel);
    // y[t * ldy + j] (+)= sum_k xp[k * mr + t] * panel[k * nr + j], t < m <= mr, j < n <= nr.
    // xp holds mr tokens interleaved, so each step reads one short contiguous run.
    void (*gemm_tile)(const float* xp, int64_t m, const float* panel, int64_t kc, float* y,
                      int64_t ldy, int64_t n, bool accumulate);

    // Matrix-vector products streaming the weights once for up to gemv_tokens tokens:
    // y[t * ldy + o] = sum_i x[t * n_in + i] * w[o, i] for t < n_tokens, o0 <= o < o1.
    int gemv_tokens;
    void (*gemv)(const Matrix& w, const float* x, int64_t n_tokens, int64_t o0, int64_t o1,
                 float* y, int64_t ldy);

    // n_q query rows (heads sharing one kv head, rows of head_dim) against keys
    // [0, n_keys) of that kv head: out_h = softmax(scale * K q_h) V, each key and
    // value row converted once for all n_q. `scores` has room for n_q * n_keys.
    // A non-null lse gets lse[h] = log sum_j exp(scale * k_j . q_h), which lets
    // results over separate runs of keys merge (merge_attention_chunks).
    void (*attend)(const float* q, int64_t n_q, const uint16_t* k, const uint16_t* v,
                   int64_t n_keys, int64_t head_dim, float scale, float* scores, float* out,
                   float* lse);
    // As attend over int8 value rows and f16 or int8 key rows (KvRows): the
    // int8 keys converted in registers, each value row's scale folded into its
    // weight; the rows' zeros enter through sum(q_h) and the weights' sum with them.
    void (*attend_q8)(const float* q, int64_t n_q, KvRows k, KvRows v, int64_t n_keys,
                      int64_t head_dim, float scale, float* scores, float* out, float* lse);

    // The row kernels of kernels.h, same contracts.
    void (*rms_norm)(const float* x, const float* gain, float gain_offset, int64_t n, float eps,
                     float* y);
    void (*weighted_rows)(const float* a, int64_t n_sets, int64_t lda, const float* rows,
                          int64_t n_rows, int64_t width, float* out);
    void (*sigmoid)(const float* x, int64_t n, float* y);
    // softmax also returns the input's log-sum-exp, so that softmaxes over
    // separate runs of a row can merge.
    float (*softmax)(float* x, int64_t n);
    void (*silu_mul)(const float* gate, const float* up, int64_t n, float* out);
    void (*gelu_tanh_mul)(const float* gate, const float* up, int64_t n, float* out);
    void (*rope)(float* x, int64_t n_heads, int64_t head_dim, const float* cos, const float* sin,
                 bool interleaved);
    void (*f32_to_f16_row)(const float* x, int64_t n, uint16_t* y);
    void (*f16_to_f32_row)(const uint16_t* x, int64_t n, float* y);
    void (*round_to_f16_row)(float* x, int64_t n);
    void (*delta_rule_step)(float* s, int64_t dk, int64_t dv, const float* q, const float* k,
                            const float* v, float beta, float decay, float* delta, float* o);
};

// The leaves in use, or null when the scalar reference runs (no SIMD path for
// this processor, ANELM_ISA=scalar, use_isa("scalar") or force_scalar(true)).
const Isa* active();

// The leaf tables, each defined only in builds for its processor family
// (ANELM_HAVE_X86_KERNELS, ANELM_HAVE_ARM_KERNELS) and chosen by active().
extern const Isa avx2_isa;    // valid only where AVX2, FMA and F16C are present
extern const Isa avx512_isa;  // valid only where AVX-512 F, BW, VL, DQ, FMA and F16C are
extern const Isa neon_isa;

#if ANELM_HAVE_X86_KERNELS
// AVX-512 F, BW, VL and DQ with VNNI's integer dot products.
bool has_avx512_vnni();
#endif

// Throw unless the arguments are ones the kernels support: a weight dtype of
// f32, f16 or bf16; whole query groups per kv head and queries inside n_ctx.
void check_matrix(const Matrix& w);
void check_attention(const AttentionArgs& args);
// The first key position query t of the block sees (0 without a window).
int64_t first_key(const AttentionArgs& args, int64_t t);

}  // namespace anelm::kernels
