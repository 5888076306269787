// Causal (optionally sliding-window) attention: tasks of (token, kv head) handing the leaf the
// query heads that share the kv head, with a per-thread score buffer.
#include <algorithm>
#include <vector>

#include "base/error.h"
#include "kernels/isa.h"

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
    if (!a.k == !a.k_i8 || !a.v == !a.v_i8 || !a.k_i8 != !a.k_scales || !a.v_i8 != !a.v_scales)
        fail("attention: expected f16 keys and values or int8 ones with row scales, not both");
    if (a.k_i8 && !a.v_i8) fail("attention: int8 keys need int8 values");
}

int64_t first_key(const AttentionArgs& a, int64_t t) {
    return a.window > 0 ? std::max<int64_t>(0, a.pos0 + t + 1 - a.window) : 0;
}

namespace {

// How one attention call splits into tasks of (token, kv head, slice of its
// query heads): a whole group shares each converted key and value row; groups
// are sliced only when there would be too few tasks for the threads.
struct AttentionTasks {
    int64_t group = 0, heads_per_slice = 0, n_slices = 0;
    int64_t count(const AttentionArgs& a) const { return a.n_tokens * a.n_head_kv * n_slices; }
};

AttentionTasks split_attention(const AttentionArgs& a, int64_t threads) {
    AttentionTasks s;
    s.group = a.n_head / a.n_head_kv;
    const int64_t n_groups = std::max<int64_t>(1, a.n_tokens * a.n_head_kv);
    const int64_t want_slices =
        std::clamp<int64_t>((2 * threads + n_groups - 1) / n_groups, 1, s.group);
    s.heads_per_slice = (s.group + want_slices - 1) / want_slices;
    s.n_slices = (s.group + s.heads_per_slice - 1) / s.heads_per_slice;
    return s;
}

void attention_task(const Isa& isa, const AttentionArgs& a, const AttentionTasks& s, int64_t task) {
    thread_local std::vector<float> scores;
    const int64_t slice = task % s.n_slices, g = task / s.n_slices % a.n_head_kv;
    const int64_t t = task / s.n_slices / a.n_head_kv;
    const int64_t h0 = g * s.group + slice * s.heads_per_slice;
    const int64_t n_q = std::min(s.heads_per_slice, s.group - slice * s.heads_per_slice);
    const int64_t k0 = first_key(a, t);
    const int64_t n_keys = a.pos0 + t + 1 - k0;
    if (scores.size() < static_cast<size_t>(n_q * n_keys)) {
        scores.resize(static_cast<size_t>(n_q * n_keys));
    }
    const int64_t row = (t * a.n_head + h0) * a.head_dim;
    const int64_t first = g * a.n_ctx + k0, kv = first * a.head_dim;
    if (!a.v_i8) {
        isa.attend(a.q + row, n_q, a.k + kv, a.v + kv, n_keys, a.head_dim, a.scale, scores.data(),
                   a.out + row);
        return;
    }
    const KvRows k = a.k_i8 ? KvRows{nullptr, a.k_i8 + kv, a.k_scales + first}
                            : KvRows{a.k + kv, nullptr, nullptr};
    isa.attend_q8(a.q + row, n_q, k, {nullptr, a.v_i8 + kv, a.v_scales + first}, n_keys, a.head_dim,
                  a.scale, scores.data(), a.out + row);
}

}  // namespace

void attention(const AttentionArgs& a, ThreadPool& pool) {
    attention_batch({&a, 1}, pool);
}

void attention_batch(std::span<const AttentionArgs> calls, ThreadPool& pool) {
    const Isa* isa = active();
    // Capped or half-precision scores are emulation and rare: the reference computes them.
    const bool reference = !isa || std::any_of(calls.begin(), calls.end(), [](const auto& a) {
        return a.softcap > 0 || a.f16_scores;
    });
    if (reference) {
        for (const AttentionArgs& a : calls) ref::attention(a, pool);
        return;
    }
    // One dispatch for every call's tasks, so several sequences' attention
    // keeps the threads busy together instead of meeting after each.
    std::vector<AttentionTasks> splits;
    std::vector<int64_t> first_task{0};
    for (const AttentionArgs& a : calls) {
        check_attention(a);
        splits.push_back(split_attention(a, pool.size()));
        first_task.push_back(first_task.back() + splits.back().count(a));
    }
    pool.run(first_task.back(), [&](int64_t task, int) {
        const size_t c = static_cast<size_t>(
            std::upper_bound(first_task.begin(), first_task.end(), task) - first_task.begin() - 1);
        attention_task(*isa, calls[c], splits[c], task - first_task[c]);
    });
}

}  // namespace anelm::kernels
