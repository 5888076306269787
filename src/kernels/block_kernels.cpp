// block_matmul: the types' layouts, the rounding of the activations, the
// choice of leaves, and the threading around them.
#include <algorithm>
#include <cmath>
#include <vector>

#include "base/aligned_allocator.h"
#include "base/error.h"
#include "base/half.h"
#include "kernels/block_isa.h"
#include "kernels/gemv_split.h"
#include "kernels/isa.h"
#include "kernels/quant_kernels.h"

namespace anelm::kernels {

namespace {

// Sizes as ggml-common.h's block structs have them (io/ggml_types.cpp has
// the same table for every type; the kernels do not depend on io).
constexpr struct {
    BlockType type;
    BlockLayout layout;
} layouts[] = {
    {BlockType::q4_0, {32, 18}},   {BlockType::q4_1, {32, 20}},   {BlockType::q5_0, {32, 22}},
    {BlockType::q5_1, {32, 24}},   {BlockType::q8_0, {32, 34}},   {BlockType::q2_k, {256, 84}},
    {BlockType::q3_k, {256, 110}}, {BlockType::q4_k, {256, 144}}, {BlockType::q5_k, {256, 176}},
    {BlockType::q6_k, {256, 210}}, {BlockType::iq4_nl, {32, 18}},
};

const BlockLayout* find_layout(uint32_t type) {
    for (const auto& l : layouts)
        if (static_cast<uint32_t>(l.type) == type) return &l.layout;
    return nullptr;
}

// q8_K: the block's value of largest magnitude (the first of equals) keeps
// its sign, so that q of that input is -127: llama.cpp needs this for IQ2_XXS
// and rounds every K type so.
void round_q8_k(const float* x, int8_t* q, float* d, int16_t* bsums) {
    constexpr int64_t n = 256;
    float max = 0.0f, amax = 0.0f;
    bool finite = true;
    for (int64_t j = 0; j < n; ++j) {
        const float ax = std::fabs(x[j]);
        finite &= std::isfinite(x[j]);
        if (ax > amax) {
            amax = ax;
            max = x[j];
        }
    }
    if (amax == 0.0f || !finite) {
        // Zeros give zeros; infinities and NaN a NaN scale that reaches the product.
        std::fill(q, q + n, int8_t{0});
        std::fill(bsums, bsums + n / act_sum_len, int16_t{0});
        *d = finite ? 0.0f : NAN;
        return;
    }
    const float iscale = -127.0f / max;
    // As round_to_int8: adding and taking away 1.5 * 2^23 rounds to nearest even.
    constexpr float round_shift = 12582912.0f;
    for (int64_t j = 0; j < n; ++j) {
        const float r = (iscale * x[j] + round_shift) - round_shift;
        q[j] = static_cast<int8_t>(std::min(127, static_cast<int>(r)));
    }
    for (int64_t g = 0; g < n / act_sum_len; ++g) {
        int sum = 0;
        for (int64_t j = 0; j < act_sum_len; ++j) sum += q[g * act_sum_len + j];
        bsums[g] = static_cast<int16_t>(sum);
    }
    *d = 1.0f / iscale;
}

// Tokens per task of passes for prompts without a GEMM leaf; and rows per
// task of the GEMM leaf.
constexpr int64_t prompt_token_chunk = 64;
constexpr int64_t gemm_rows_per_task = 64;
// Tokens per call of the scalar leaf.
constexpr int scalar_pass_tokens = 4;

// The scalar leaf: ref::block_row_dot for each row and token.
void scalar_gemv(const BlockMatrix& w, const BlockActs& x, int64_t n_tokens, int64_t o0, int64_t o1,
                 float* y, int64_t ldy) {
    for (int64_t o = o0; o < o1; ++o) {
        for (int64_t t = 0; t < n_tokens; ++t)
            y[t * ldy + o] = ref::block_row_dot(w.type, w.data + o * w.row_bytes, x.token(t));
    }
}

// The tokens rounded for w (in parallel, by isa's leaf where it has one),
// with x.qu if asked for; the storage is the calling thread's and lives until
// its next call.
BlockActs round_tokens(const BlockIsa* isa, const BlockMatrix& w, const float* x, int64_t n_tokens,
                       bool with_qu, ThreadPool& pool) {
    const ActFormat f = act_format(w.type);
    const int64_t n_in = w.n_in, n_blocks = n_in / act_block(f), n_sums = n_in / act_sum_len;
    thread_local std::vector<int8_t, AlignedAllocator<int8_t>> q_buffer;
    thread_local std::vector<uint8_t, AlignedAllocator<uint8_t>> qu_buffer;
    thread_local std::vector<float> d_buffer, s_buffer;
    thread_local std::vector<int16_t> bsum_buffer;
    q_buffer.resize(static_cast<size_t>(n_tokens * n_in));
    qu_buffer.resize(with_qu ? q_buffer.size() : 0);
    d_buffer.resize(static_cast<size_t>(n_tokens * n_blocks));
    s_buffer.resize(f == ActFormat::q8_1 ? d_buffer.size() : 0);
    bsum_buffer.resize(f == ActFormat::q8_k ? static_cast<size_t>(n_tokens * n_sums) : 0);
    // Thread-local names inside the tasks would mean the workers' own buffers.
    int8_t* q = q_buffer.data();
    uint8_t* qu = with_qu ? qu_buffer.data() : nullptr;
    float* d = d_buffer.data();
    float* s = s_buffer.empty() ? nullptr : s_buffer.data();
    int16_t* bsums = bsum_buffer.empty() ? nullptr : bsum_buffer.data();
    const auto round = isa && isa->round ? isa->round : round_token;
    pool.run(n_tokens, [&](int64_t t, int) {
        int8_t* qt = q + t * n_in;
        round(f, x + t * n_in, n_in, qt, d + t * n_blocks, s ? s + t * n_blocks : nullptr,
              bsums ? bsums + t * n_sums : nullptr);
        if (qu) {
            for (int64_t i = 0; i < n_in; ++i) qu[t * n_in + i] = static_cast<uint8_t>(qt[i] + 128);
        }
    });
    return {q, d, s, bsums, n_in, act_block(f), qu};
}

}  // namespace

bool block_type_supported(uint32_t ggml_type) {
    return find_layout(ggml_type) != nullptr;
}

BlockLayout block_layout(BlockType type) {
    const BlockLayout* l = find_layout(static_cast<uint32_t>(type));
    if (!l)
        fail("block_matmul: ggml type {} is not a supported block type",
             static_cast<uint32_t>(type));
    return *l;
}

ActFormat act_format(BlockType type) {
    switch (type) {
        case BlockType::q4_1:
        case BlockType::q5_1:
            return ActFormat::q8_1;
        case BlockType::q2_k:
        case BlockType::q3_k:
        case BlockType::q4_k:
        case BlockType::q5_k:
        case BlockType::q6_k:
            return ActFormat::q8_k;
        default:
            return ActFormat::q8_0;
    }
}

int64_t act_block(ActFormat f) {
    return f == ActFormat::q8_k ? 256 : 32;
}

void round_token(ActFormat f, const float* x, int64_t n_in, int8_t* q, float* d, float* s,
                 int16_t* bsums) {
    const int64_t len = act_block(f);
    for (int64_t b = 0; b < n_in / len; ++b) {
        const float* xb = x + b * len;
        int8_t* qb = q + b * len;
        if (f == ActFormat::q8_k) {
            round_q8_k(xb, qb, d + b, bsums + b * (len / act_sum_len));
            continue;
        }
        bool finite = true;
        for (int64_t j = 0; j < len; ++j) finite &= std::isfinite(xb[j]);
        if (!finite) {
            std::fill(qb, qb + len, int8_t{0});
            d[b] = NAN;
            if (s) s[b] = NAN;
            continue;
        }
        // round_to_int8 is llama.cpp's x86 rounding: d = max / 127, q = x * (127 / max).
        const float scale = round_to_int8(xb, len, qb);
        d[b] = f16_to_f32(f32_to_f16(scale));
        if (f == ActFormat::q8_1) {
            int sum = 0;
            for (int64_t j = 0; j < len; ++j) sum += qb[j];
            s[b] = f16_to_f32(f32_to_f16(scale * static_cast<float>(sum)));
        }
    }
}

void check_block_matrix(const BlockMatrix& w) {
    const BlockLayout l = block_layout(w.type);
    if (w.n_out < 0 || w.n_in < 0 || w.n_in % l.elems != 0)
        fail("block_matmul: shape [{}, {}] is not whole rows of {}-input blocks", w.n_out, w.n_in,
             l.elems);
    if (w.row_bytes != w.n_in / l.elems * l.bytes)
        fail("block_matmul: rows of {} bytes, expected {} for {} inputs", w.row_bytes,
             w.n_in / l.elems * l.bytes, w.n_in);
    if (!w.data && w.n_out * w.n_in > 0) fail("block_matmul: matrix without data");
}

const BlockIsa* block_active() {
#if ANELM_HAVE_X86_KERNELS
    const Isa* isa = active();
    if (isa == &avx512_isa && has_avx512_vnni()) return &avx512_block_isa;
    if (isa) return &avx2_block_isa;
#endif
    return nullptr;
}

std::vector<const BlockIsa*> block_available() {
    std::vector<const BlockIsa*> tables;
    if (!active()) return tables;
#if ANELM_HAVE_X86_KERNELS
    if (has_avx512_vnni()) tables.push_back(&avx512_block_isa);
    tables.push_back(&avx2_block_isa);
#endif
    return tables;
}

void block_matmul(const BlockMatrix& w, const float* x, int64_t n_tokens, float* y,
                  ThreadPool& pool) {
    block_matmul(block_active(), w, x, n_tokens, y, pool);
}

void block_matmul(const BlockIsa* isa, const BlockMatrix& w, const float* x, int64_t n_tokens,
                  float* y, ThreadPool& pool) {
    check_block_matrix(w);
    if (n_tokens <= 0 || w.n_out <= 0) return;
    if (w.n_in == 0) return std::fill(y, y + n_tokens * w.n_out, 0.0f);
    const BlockGemv gemm = isa && isa->gemm && n_tokens > block_gemv_max_tokens
                               ? isa->gemm(w.type, n_tokens)
                               : nullptr;
    const BlockActs acts = round_tokens(isa, w, x, n_tokens, gemm != nullptr, pool);
    if (gemm) {
        const int64_t n_tasks = (w.n_out + gemm_rows_per_task - 1) / gemm_rows_per_task;
        return pool.run(n_tasks, [&](int64_t task, int) {
            const int64_t o0 = task * gemm_rows_per_task;
            gemm(w, acts, n_tokens, o0, std::min(w.n_out, o0 + gemm_rows_per_task), y, w.n_out);
        });
    }
    BlockGemv leaf = isa ? isa->leaf(w.type) : nullptr;
    const int64_t pass = leaf ? isa->pass_tokens : scalar_pass_tokens;
    if (!leaf) leaf = scalar_gemv;
    const auto passes = [&](int64_t t0, int64_t t1, int64_t o0, int64_t o1) {
        for (int64_t t = t0; t < t1; t += pass) {
            const int64_t n = std::min(pass, t1 - t);
            leaf(w, acts.token(t), n, o0, o1, y + t * w.n_out, w.n_out);
        }
    };
    const GemvSplit split = gemv_split(w.n_out, w.row_bytes, n_tokens, pass, pool.size());
    if (n_tokens <= block_gemv_max_tokens) {
        return pool.run(split.n_tasks(), [&](int64_t task, int) {
            passes(0, n_tokens, split.begin(task), split.begin(task + 1));
        });
    }
    // A prompt: tasks of rows that stay in L2 (the split's tasks for several
    // passes) by chunks of tokens whose rounded rows stay there too.
    const int64_t n_row_tasks = split.n_tasks();
    const int64_t n_chunks = (n_tokens + prompt_token_chunk - 1) / prompt_token_chunk;
    pool.run(n_row_tasks * n_chunks, [&](int64_t task, int) {
        const int64_t r = task / n_chunks, t0 = task % n_chunks * prompt_token_chunk;
        passes(t0, std::min(n_tokens, t0 + prompt_token_chunk), split.begin(r), split.begin(r + 1));
    });
}

}  // namespace anelm::kernels
