// Causal (optionally sliding-window) attention: tasks of (token, kv head) handing the leaf the
// query heads that share the kv head, with a per-thread score buffer; with few such tasks for
// the threads, each task takes a chunk of the keys and the chunks' softmaxes are merged.
#include <algorithm>
#include <cmath>
#include <limits>
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
    if (!a.k == !a.k_i8 || !a.v == !a.v_i8 || !a.k_i8 != !a.k_scales || !a.k_i8 != !a.k_zeros ||
        !a.v_i8 != !a.v_scales || !a.v_i8 != !a.v_zeros)
        fail("attention: expected f16 keys and values or int8 ones with row scales and zeros");
    if (a.k_i8 && !a.v_i8) fail("attention: int8 keys need int8 values");
}

int64_t first_key(const AttentionArgs& a, int64_t t) {
    return a.window > 0 ? std::max<int64_t>(0, a.pos0 + t + 1 - a.window) : 0;
}

namespace {

// Fewest keys a chunk is cut to: below this a task's fixed costs outweigh the
// threads it keeps busy.
constexpr int64_t min_chunk_keys = 256;

// How one attention call splits into tasks of (token, kv head, slice of its
// query heads, chunk of its keys): a whole group shares each converted key and
// value row. With too few groups for the threads the keys are cut into chunks
// (each row still read once) and, if the keys are too few for that, the group's
// query heads into slices.
struct AttentionTasks {
    int64_t group = 0, heads_per_slice = 0, n_slices = 0, n_chunks = 1;
    int64_t count(const AttentionArgs& a) const {
        return a.n_tokens * a.n_head_kv * n_slices * n_chunks;
    }
};

AttentionTasks split_attention(const AttentionArgs& a, int64_t threads) {
    AttentionTasks s;
    s.group = a.n_head / a.n_head_kv;
    const int64_t n_groups = std::max<int64_t>(1, a.n_tokens * a.n_head_kv);
    const int64_t want = (2 * threads + n_groups - 1) / n_groups;
    // The last query sees the most keys.
    const int64_t most_keys =
        a.n_tokens > 0 ? a.pos0 + a.n_tokens - first_key(a, a.n_tokens - 1) : 0;
    s.n_chunks = std::clamp<int64_t>(most_keys / min_chunk_keys, 1, want);
    const int64_t want_slices =
        std::clamp<int64_t>((want + s.n_chunks - 1) / s.n_chunks, 1, s.group);
    s.heads_per_slice = (s.group + want_slices - 1) / want_slices;
    s.n_slices = (s.group + s.heads_per_slice - 1) / s.heads_per_slice;
    return s;
}

// Where a call's chunks put their results before the merge: out rows
// [n_chunks][n_tokens * n_head * head_dim] and their log-sum-exps
// [n_chunks][n_tokens * n_head]. Unused with one chunk.
struct ChunkResults {
    float* out = nullptr;
    float* lse = nullptr;
};

void attention_task(const Isa& isa, const AttentionArgs& a, const AttentionTasks& s,
                    const ChunkResults& chunks, int64_t task) {
    thread_local std::vector<float> scores;
    const int64_t chunk = task % s.n_chunks, rest = task / s.n_chunks;
    const int64_t slice = rest % s.n_slices, g = rest / s.n_slices % a.n_head_kv;
    const int64_t t = rest / s.n_slices / a.n_head_kv;
    const int64_t h0 = g * s.group + slice * s.heads_per_slice;
    const int64_t n_q = std::min(s.heads_per_slice, s.group - slice * s.heads_per_slice);
    const int64_t row = (t * a.n_head + h0) * a.head_dim;
    int64_t k0 = first_key(a, t), n_keys = a.pos0 + t + 1 - k0;
    float* out = a.out + row;
    float* lse = nullptr;
    if (s.n_chunks > 1) {
        const int64_t len = (n_keys + s.n_chunks - 1) / s.n_chunks;
        lse = chunks.lse + chunk * a.n_tokens * a.n_head + t * a.n_head + h0;
        out = chunks.out + chunk * a.n_tokens * a.n_head * a.head_dim + row;
        n_keys = std::min(len, n_keys - chunk * len);
        k0 += chunk * len;
        if (n_keys <= 0) {  // an early query with fewer keys than chunks
            std::fill_n(lse, n_q, -std::numeric_limits<float>::infinity());
            return;
        }
    }
    if (scores.size() < static_cast<size_t>(n_q * n_keys)) {
        scores.resize(static_cast<size_t>(n_q * n_keys));
    }
    const int64_t first = g * a.n_ctx + k0, kv = first * a.head_dim;
    if (!a.v_i8) {
        isa.attend(a.q + row, n_q, a.k + kv, a.v + kv, n_keys, a.head_dim, a.scale, scores.data(),
                   out, lse);
        return;
    }
    const KvRows k = a.k_i8 ? KvRows{nullptr, a.k_i8 + kv, a.k_scales + first, a.k_zeros + first}
                            : KvRows{a.k + kv};
    const KvRows v{nullptr, a.v_i8 + kv, a.v_scales + first, a.v_zeros + first};
    isa.attend_q8(a.q + row, n_q, k, v, n_keys, a.head_dim, a.scale, scores.data(), out, lse);
}

// out = sum_c exp(lse_c) out_c / sum_c exp(lse_c) for each query row: the
// softmax over all keys from each chunk's softmax over its own.
void merge_attention_chunks(const AttentionArgs& a, int64_t n_chunks, const ChunkResults& chunks) {
    const int64_t n_rows = a.n_tokens * a.n_head, d = a.head_dim;
    for (int64_t r = 0; r < n_rows; ++r) {
        float max = -std::numeric_limits<float>::infinity();
        for (int64_t c = 0; c < n_chunks; ++c) max = std::max(max, chunks.lse[c * n_rows + r]);
        float* out = a.out + r * d;
        std::fill_n(out, d, 0.0f);
        float total = 0;
        for (int64_t c = 0; c < n_chunks; ++c) {
            const float lse = chunks.lse[c * n_rows + r];
            if (lse == -std::numeric_limits<float>::infinity()) continue;
            const float w = std::exp(lse - max);
            const float* part = chunks.out + (c * n_rows + r) * d;
            for (int64_t i = 0; i < d; ++i) out[i] += w * part[i];
            total += w;
        }
        for (int64_t i = 0; i < d; ++i) out[i] /= total;
    }
}

}  // namespace

void attention(const AttentionArgs& a, ThreadPool& pool) {
    attention_batch({&a, 1}, pool);
}

int64_t attention_key_chunks(const AttentionArgs& a, int64_t threads) {
    return split_attention(a, threads).n_chunks;
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
    std::vector<int64_t> first_task{0}, first_result{0};
    for (const AttentionArgs& a : calls) {
        check_attention(a);
        splits.push_back(split_attention(a, pool.size()));
        first_task.push_back(first_task.back() + splits.back().count(a));
        const int64_t n = splits.back().n_chunks;
        first_result.push_back(first_result.back() +
                               (n > 1 ? n * a.n_tokens * a.n_head * (a.head_dim + 1) : 0));
    }
    thread_local std::vector<float> results;
    if (results.size() < static_cast<size_t>(first_result.back())) {
        results.resize(static_cast<size_t>(first_result.back()));
    }
    std::vector<ChunkResults> chunks;
    for (size_t c = 0; c < calls.size(); ++c) {
        if (splits[c].n_chunks == 1) {  // written in place: no room taken (results may be empty)
            chunks.push_back({});
            continue;
        }
        float* out = results.data() + first_result[c];
        chunks.push_back({out, out + splits[c].n_chunks * calls[c].n_tokens * calls[c].n_head *
                                         calls[c].head_dim});
    }
    pool.run(first_task.back(), [&](int64_t task, int) {
        const size_t c = static_cast<size_t>(
            std::upper_bound(first_task.begin(), first_task.end(), task) - first_task.begin() - 1);
        attention_task(*isa, calls[c], splits[c], chunks[c], task - first_task[c]);
    });
    for (size_t c = 0; c < calls.size(); ++c) {
        if (splits[c].n_chunks > 1) merge_attention_chunks(calls[c], splits[c].n_chunks, chunks[c]);
    }
}

}  // namespace anelm::kernels
