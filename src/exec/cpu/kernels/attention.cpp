// Causal attention: one task per (token, head), each a leaf call with a
// per-thread score buffer.
#include <vector>

#include "base/error.h"
#include "exec/cpu/kernels/isa.h"

namespace anelm::kernels {

void check_attention(const AttentionArgs& a) {
    if (a.n_head <= 0 || a.n_head_kv <= 0 || a.n_head % a.n_head_kv != 0) {
        fail("attention: n_head {} is not a positive multiple of n_head_kv {}", a.n_head,
             a.n_head_kv);
    }
    if (a.head_dim <= 0 || a.n_tokens < 0 || a.pos0 < 0 || a.pos0 + a.n_tokens > a.n_ctx) {
        fail("attention: queries at positions {}..{} with head_dim {}, expected inside n_ctx {}",
             a.pos0, a.pos0 + a.n_tokens, a.head_dim, a.n_ctx);
    }
}

void attention(const AttentionArgs& a, ThreadPool& pool) {
    const Isa* isa = active();
    if (!isa) return ref::attention(a, pool);
    check_attention(a);
    const int64_t group = a.n_head / a.n_head_kv;
    const int64_t kv_stride = a.n_ctx * a.head_dim;
    pool.run(a.n_tokens * a.n_head, [&](int64_t task, int) {
        thread_local std::vector<float> scores;
        const int64_t t = task / a.n_head, h = task % a.n_head;
        const int64_t n_keys = a.pos0 + t + 1;
        if (scores.size() < static_cast<size_t>(n_keys)) scores.resize(static_cast<size_t>(n_keys));
        isa->attend(a.q + task * a.head_dim, a.k + (h / group) * kv_stride,
                    a.v + (h / group) * kv_stride, n_keys, a.head_dim, a.scale, scores.data(),
                    a.out + task * a.head_dim);
    });
}

}  // namespace anelm::kernels
