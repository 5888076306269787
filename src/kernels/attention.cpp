// Causal (optionally sliding-window) attention: tasks of (token, kv head) handing the leaf the
// query heads that share the kv head, with a per-thread score buffer; with few such tasks for
// the threads, each task takes a chunk of the keys and the chunks' softmaxes are merged.
// Prompts take tasks of (block of tokens, kv head) instead, so that each key row comes from
// memory once per block rather than once per token.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "base/error.h"
#include "kernels/isa.h"
#include "kernels/tile_packing.h"

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

// Most tokens a prompt's block task takes, and the keys it reads at a time: a
// chunk's f16 key and value rows (256 KiB at head_dim 128) stay in L2 while
// every query of the block passes over them.
constexpr int64_t max_block_tokens = 64;
constexpr int64_t block_chunk_keys = 512;
// Queries per leaf call on int8 rows: more ran slower (64 KiB of scores
// against 256 KiB: blocks of 16 tokens 255 GFLOP/s, of 64 193).
constexpr int64_t leaf_slice_queries = 32;

// How one attention call splits into tasks. Prompts: (block of tokens, kv
// head). Otherwise (token, kv head, slice of its query heads, chunk of its
// keys): a whole group shares each converted key and value row. With too few
// groups for the threads the keys are cut into chunks (each row still read
// once) and, if the keys are too few for that, the group's query heads into
// slices.
struct AttentionTasks {
    int64_t group = 0, heads_per_slice = 0, n_slices = 0, n_chunks = 1;
    int64_t block = 0;  // tokens per task of a prompt's blocks; 0: one token per task
    int64_t count(const AttentionArgs& a) const {
        if (block > 0) return (a.n_tokens + block - 1) / block * a.n_head_kv;
        return a.n_tokens * a.n_head_kv * n_slices * n_chunks;
    }
};

// Tokens per block task for a call, 0 where tasks of one token serve better:
// too few tokens, blocks that would leave threads idle, or a sliding window
// so short that a block's tokens share few keys.
int64_t query_block(const AttentionArgs& a, int64_t threads) {
    const int64_t block = std::min(max_block_tokens, a.n_tokens * a.n_head_kv / (2 * threads));
    if (block < 4) return 0;
    if (a.window > 0 && a.window < 2 * block) return 0;
    return block;
}

AttentionTasks split_attention(const AttentionArgs& a, int64_t threads) {
    AttentionTasks s;
    s.group = a.n_head / a.n_head_kv;
    s.block = query_block(a, threads);
    if (s.block > 0) return s;
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

// The leaf over n_q query heads q (contiguous rows) and keys [k0, k0 + n_keys)
// of kv head g: out their softmax-weighted values, lse (if not null) their
// log-sum-exps. scores holds n_q * n_keys.
void attend_keys(const Isa& isa, const AttentionArgs& a, const float* q, int64_t n_q, int64_t g,
                 int64_t k0, int64_t n_keys, float* scores, float* out, float* lse) {
    const int64_t first = g * a.n_ctx + k0, kv = first * a.head_dim;
    if (!a.v_i8) {
        isa.attend(q, n_q, a.k + kv, a.v + kv, n_keys, a.head_dim, a.scale, scores, out, lse);
        return;
    }
    const KvRows k = a.k_i8 ? KvRows{nullptr, a.k_i8 + kv, a.k_scales + first, a.k_zeros + first}
                            : KvRows{a.k + kv};
    const KvRows v{nullptr, a.v_i8 + kv, a.v_scales + first, a.v_zeros + first};
    isa.attend_q8(q, n_q, k, v, n_keys, a.head_dim, a.scale, scores, out, lse);
}

// acc = the softmax-weighted values over the keys of acc and of part together,
// for n_rows rows of width d, each row a softmax over its own keys with their
// log-sum-exp (-inf: no keys).
void merge_softmax(float* acc, float* acc_lse, const float* part, const float* part_lse,
                   int64_t n_rows, int64_t d) {
    for (int64_t r = 0; r < n_rows; ++r) {
        if (part_lse[r] == -std::numeric_limits<float>::infinity()) continue;
        if (acc_lse[r] == -std::numeric_limits<float>::infinity()) {
            std::copy_n(part + r * d, d, acc + r * d);
            acc_lse[r] = part_lse[r];
            continue;
        }
        const float max = std::max(acc_lse[r], part_lse[r]);
        const float wa = std::exp(acc_lse[r] - max), wp = std::exp(part_lse[r] - max);
        const float inv = 1.0f / (wa + wp);
        float* o = acc + r * d;
        const float* p = part + r * d;
        for (int64_t i = 0; i < d; ++i) o[i] = (wa * o[i] + wp * p[i]) * inv;
        acc_lse[r] = max + std::log(wa + wp);
    }
}

// f16 rows of one chunk of keys [k0, k0 + n_keys) of kv head g against n_q
// queries packed in tiles of isa.mr (qp, scaled): the scores as GEMM tiles
// against panels of isa.nr keys, their softmax per query (lse its
// log-sum-exp), then the weighted values as tiles against panels of isa.nr
// value columns. Each key and value row is converted once per chunk for all
// the queries, at the GEMM's rate rather than the one-query leaf's.
void attend_chunk_tiles(const Isa& isa, const AttentionArgs& a, const float* qp, int64_t n_q,
                        int64_t g, int64_t k0, int64_t n_keys, float* out, float* lse) {
    thread_local std::vector<float> score_buffer, weight_buffer, panel_buffer, value_buffer;
    const int64_t mr = isa.mr, nr = isa.nr, d = a.head_dim;
    const int64_t n_tiles = (n_q + mr - 1) / mr;
    float* scores = aligned_scratch(score_buffer, n_q * n_keys);
    float* weights = aligned_scratch(weight_buffer, n_tiles * mr * n_keys);
    float* panel = aligned_scratch(panel_buffer, std::max(d, n_keys) * nr);
    const int64_t first = (g * a.n_ctx + k0) * d;
    const Matrix keys{DType::f16, a.k + first, n_keys, d};
    for (int64_t o = 0; o < n_keys; o += nr) {
        const int64_t n = std::min(nr, n_keys - o);
        isa.pack_panel(keys, o, n, 0, d, panel);
        for (int64_t t = 0; t < n_q; t += mr) {
            isa.gemm_tile(qp + t * d, std::min(mr, n_q - t), panel, d, scores + t * n_keys + o,
                          n_keys, n, false);
        }
    }
    for (int64_t r = 0; r < n_q; ++r) lse[r] = isa.softmax(scores + r * n_keys, n_keys);
    for (int64_t t = 0; t < n_q; t += mr) {
        pack_tokens(scores + t * n_keys, n_keys, std::min(mr, n_q - t), mr, weights + t * n_keys);
    }
    // The chunk's value rows in f32 at once, then each panel's columns copied out of them.
    float* values = aligned_scratch(value_buffer, n_keys * d);
    isa.f16_to_f32_row(a.v + first, n_keys * d, values);
    for (int64_t c = 0; c < d; c += nr) {
        const int64_t n = std::min(nr, d - c);
        for (int64_t j = 0; j < n_keys; ++j) std::copy_n(values + j * d + c, n, panel + j * nr);
        for (int64_t t = 0; t < n_q; t += mr) {
            isa.gemm_tile(weights + t * n_keys, std::min(mr, n_q - t), panel, n_keys,
                          out + t * d + c, d, n, false);
        }
    }
}

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
    attend_keys(isa, a, a.q + row, n_q, g, k0, n_keys, aligned_scratch(scores, n_q * n_keys), out,
                lse);
}

// A block of tokens against kv head g. The keys every token of the block sees
// go in chunks, each chunk's rows read once for all the block's queries; the
// few keys only some tokens see (the causal triangle, a window's leading edge)
// go token by token; the softmaxes are merged as they come.
void block_task(const Isa& isa, const AttentionArgs& a, const AttentionTasks& s, int64_t task) {
    thread_local std::vector<float> scores, q, q_tiles, acc, acc_lse, part, part_lse;
    const int64_t g = task % a.n_head_kv, t0 = task / a.n_head_kv * s.block;
    const int64_t n_t = std::min(s.block, a.n_tokens - t0), d = a.head_dim, n_q = n_t * s.group;
    const int64_t head_row = s.group * d;  // one token's query heads of kv head g
    float* qs = aligned_scratch(q, n_q * d);
    float* out = aligned_scratch(acc, n_q * d);
    float* lse = aligned_scratch(acc_lse, n_q);
    float* part_out = aligned_scratch(part, n_q * d);
    float* plse = aligned_scratch(part_lse, n_q);
    for (int64_t t = 0; t < n_t; ++t) {
        std::copy_n(a.q + ((t0 + t) * a.n_head + g * s.group) * d, head_row, qs + t * head_row);
    }
    // f16 rows go through GEMM tiles: the queries packed once, scaled.
    const bool tiles = !a.v_i8;
    float* qp = nullptr;
    if (tiles) {
        const int64_t mr = isa.mr, padded = (n_q + mr - 1) / mr * mr;
        qp = aligned_scratch(q_tiles, padded * d);
        for (int64_t t = 0; t < n_q; t += mr) {
            pack_tokens(qs + t * d, d, std::min(mr, n_q - t), mr, qp + t * d);
        }
        for (int64_t i = 0; i < padded * d; ++i) qp[i] *= a.scale;
    }
    // Keys [shared0, shared1): seen by every token of the block.
    const int64_t shared0 = first_key(a, t0 + n_t - 1), shared1 = a.pos0 + t0 + 1;
    std::fill_n(lse, n_q, -std::numeric_limits<float>::infinity());
    for (int64_t k0 = shared0; k0 < shared1; k0 += block_chunk_keys) {
        const int64_t n_keys = std::min(block_chunk_keys, shared1 - k0);
        if (tiles) {
            attend_chunk_tiles(isa, a, qp, n_q, g, k0, n_keys, part_out, plse);
        } else {
            // The leaf in slices of queries whose scores stay in L2 beside the chunk's rows.
            for (int64_t r = 0; r < n_q; r += leaf_slice_queries) {
                const int64_t n = std::min(leaf_slice_queries, n_q - r);
                attend_keys(isa, a, qs + r * d, n, g, k0, n_keys,
                            aligned_scratch(scores, n * n_keys), part_out + r * d, plse + r);
            }
        }
        merge_softmax(out, lse, part_out, plse, n_q, d);
    }
    for (int64_t t = 0; t < n_t; ++t) {
        const int64_t lead0 = first_key(a, t0 + t), trail1 = a.pos0 + t0 + t + 1;
        const int64_t ranges[2][2] = {{lead0, shared0}, {shared1, trail1}};
        for (const auto& [k0, k1] : ranges) {
            if (k1 <= k0) continue;
            attend_keys(isa, a, qs + t * head_row, s.group, g, k0, k1 - k0,
                        aligned_scratch(scores, s.group * (k1 - k0)), part_out, plse);
            merge_softmax(out + t * head_row, lse + t * s.group, part_out, plse, s.group, d);
        }
    }
    for (int64_t t = 0; t < n_t; ++t) {
        std::copy_n(out + t * head_row, head_row, a.out + ((t0 + t) * a.n_head + g * s.group) * d);
    }
}

// Each query row's softmax over all keys from each chunk's softmax over its
// own: merged into chunk 0's rows, then written out.
void merge_attention_chunks(const AttentionArgs& a, int64_t n_chunks, const ChunkResults& chunks) {
    const int64_t n_rows = a.n_tokens * a.n_head, d = a.head_dim;
    for (int64_t c = 1; c < n_chunks; ++c) {
        merge_softmax(chunks.out, chunks.lse, chunks.out + c * n_rows * d, chunks.lse + c * n_rows,
                      n_rows, d);
    }
    std::copy_n(chunks.out, n_rows * d, a.out);
}

}  // namespace

void attention(const AttentionArgs& a, ThreadPool& pool) {
    attention_batch({&a, 1}, pool);
}

int64_t attention_key_chunks(const AttentionArgs& a, int64_t threads) {
    return split_attention(a, threads).n_chunks;
}

int64_t attention_query_block(const AttentionArgs& a, int64_t threads) {
    return split_attention(a, threads).block;
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
        if (splits[c].block > 0) {
            block_task(*isa, calls[c], splits[c], task - first_task[c]);
        } else {
            attention_task(*isa, calls[c], splits[c], chunks[c], task - first_task[c]);
        }
    });
    for (size_t c = 0; c < calls.size(); ++c) {
        if (splits[c].n_chunks > 1) merge_attention_chunks(calls[c], splits[c].n_chunks, chunks[c]);
    }
}

}  // namespace anelm::kernels
