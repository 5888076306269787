// Causal (optionally sliding-window) attention: tasks of (token, kv head) handing the leaf the
// query heads that share the kv head, with a per-thread score buffer.
#include <algorithm>
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

int64_t first_key(const AttentionArgs& a, int64_t t) {
    return a.window > 0 ? std::max<int64_t>(0, a.pos0 + t + 1 - a.window) : 0;
}

void attention(const AttentionArgs& a, ThreadPool& pool) {
    const Isa* isa = active();
    // Capped or half-precision scores are emulation and rare: the reference computes them.
    if (!isa || a.softcap > 0 || a.f16_scores) return ref::attention(a, pool);
    check_attention(a);
    // Tasks of (token, kv head, slice of its query heads): a whole group shares
    // each converted key and value row; groups are sliced only when there would
    // be too few tasks for the threads.
    const int64_t group = a.n_head / a.n_head_kv;
    const int64_t n_groups = std::max<int64_t>(1, a.n_tokens * a.n_head_kv);
    const int64_t want_slices =
        std::clamp<int64_t>((2 * pool.size() + n_groups - 1) / n_groups, 1, group);
    const int64_t heads_per_slice = (group + want_slices - 1) / want_slices;
    const int64_t n_slices = (group + heads_per_slice - 1) / heads_per_slice;
    const int64_t kv_stride = a.n_ctx * a.head_dim;
    pool.run(a.n_tokens * a.n_head_kv * n_slices, [&](int64_t task, int) {
        thread_local std::vector<float> scores;
        const int64_t slice = task % n_slices, g = task / n_slices % a.n_head_kv;
        const int64_t t = task / n_slices / a.n_head_kv;
        const int64_t h0 = g * group + slice * heads_per_slice;
        const int64_t n_q = std::min(heads_per_slice, group - slice * heads_per_slice);
        const int64_t k0 = first_key(a, t);
        const int64_t n_keys = a.pos0 + t + 1 - k0;
        if (scores.size() < static_cast<size_t>(n_q * n_keys)) {
            scores.resize(static_cast<size_t>(n_q * n_keys));
        }
        const int64_t row = (t * a.n_head + h0) * a.head_dim;
        const int64_t kv = g * kv_stride + k0 * a.head_dim;
        isa->attend(a.q + row, n_q, a.k + kv, a.v + kv, n_keys, a.head_dim, a.scale, scores.data(),
                    a.out + row);
    });
}

}  // namespace anelm::kernels
