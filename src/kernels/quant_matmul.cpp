// quant_matmul: argument checks, the choice of leaves, and the threading and
// blocking around them.
#include <algorithm>
#include <array>
#include <span>
#include <vector>

#include "base/aligned_allocator.h"
#include "base/error.h"
#include "kernels/gemv_split.h"
#include "kernels/int8_rows.h"
#include "kernels/isa.h"
#include "kernels/quant_isa.h"

namespace anelm::kernels {

namespace {

// Rows decoded per GEMM step: about 4 MiB of f32 (a block, not the matrix):
// large enough that the GEMM's own setup is amortised, small enough for L3.
constexpr int64_t gemm_block_bytes = int64_t{4} << 20;

int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

constexpr int64_t max_block_len = 128;

// xb = x in block order, one row of n_in per token.
void to_block_order(const QuantIsa& isa, int nbits, const float* x, int64_t n_in, int64_t n_tokens,
                    float* xb) {
    const int64_t len = isa.block_len(nbits);
    std::array<int64_t, max_block_len> slot{};
    for (int64_t e = 0; e < len; ++e) slot[static_cast<size_t>(e)] = isa.block_slot(nbits, e);
    const int64_t n_whole = len ? n_in / len * len : 0;
    for (int64_t t = 0; t < n_tokens; ++t) {
        const float* src = x + t * n_in;
        float* dst = xb + t * n_in;
        for (int64_t b = 0; b < n_whole; b += len) {
            for (int64_t e = 0; e < len; ++e) dst[b + slot[static_cast<size_t>(e)]] = src[b + e];
        }
        std::copy(src + n_whole, src + n_in, dst + n_whole);
    }
}

void matmul_gemv(const QuantIsa& isa, const QuantMatrix& w, const float* x, int64_t n_tokens,
                 float* y, ThreadPool& pool) {
    thread_local std::vector<float> xb_buffer;
    xb_buffer.resize(static_cast<size_t>(n_tokens * w.n_in));
    float* xb = xb_buffer.data();
    to_block_order(isa, w.nbits, x, w.n_in, n_tokens, xb);
    const GemvSplit split =
        gemv_split(w.n_out, w.row_bytes(), n_tokens, isa.gemv_tokens, pool.size());
    pool.run(split.n_tasks(), [&](int64_t task, int) {
        const int64_t o0 = split.begin(task), o1 = split.begin(task + 1);
        for (int64_t t0 = 0; t0 < n_tokens; t0 += isa.gemv_tokens) {
            const int64_t n = std::min<int64_t>(isa.gemv_tokens, n_tokens - t0);
            isa.gemv(w, xb + t0 * w.n_in, n, o0, o1, y + t0 * w.n_out, w.n_out);
        }
    });
}

// Whether the integer leaves take w at n_tokens: int8_dot_applies and the
// instruction set has leaves for that many tokens.
bool int8_leaves_apply(const QuantIsa& isa, const QuantMatrix& w, int64_t n_tokens) {
    const bool few_tokens = n_tokens <= quant_gemv_max_tokens;
    return int8_dot_applies(w) && int8_layout_for(isa, w) == w.int8_layout &&
           (few_tokens ? isa.gemv_int8 != nullptr : isa.gemm_int8 != nullptr);
}

// Where each slot of a block takes its input from for isa's leaves at nbits
// (the inverse of int8_slot), or null where every input keeps its place;
// worked out once per leaves and width and kept for the thread.
const std::array<uint8_t, int8_block>* slot_sources(const QuantIsa& isa, int nbits) {
    struct Order {
        const QuantIsa* isa;
        int nbits;
        bool identity;
        std::array<uint8_t, int8_block> source;
    };
    thread_local std::vector<Order> orders;
    auto it = std::find_if(orders.begin(), orders.end(),
                           [&](const Order& o) { return o.isa == &isa && o.nbits == nbits; });
    if (it == orders.end()) {
        Order o{&isa, nbits, true, {}};
        for (int64_t e = 0; e < int8_block; ++e) {
            const int64_t slot = isa.int8_slot(nbits, e);
            o.source[static_cast<size_t>(slot)] = static_cast<uint8_t>(e);
            o.identity &= slot == e;
        }
        orders.push_back(o);
        it = orders.end() - 1;
    }
    return it->identity ? nullptr : &it->source;
}

// QuantIsa::round_int8_block without SIMD, the slots given by `source` (null:
// in order).
float round_block_to_int8(const float* x, const std::array<uint8_t, int8_block>* source, int8_t* q,
                          uint8_t* magnitude, int32_t* sum) {
    std::array<int8_t, int8_block> natural;
    int8_t* rounded = source ? natural.data() : q;
    const float scale = round_to_int8(x, int8_block, rounded);
    int32_t s = 0;
    for (int64_t e = 0; e < int8_block; ++e) s += rounded[e];
    *sum = s;
    if (source) {
        for (int64_t j = 0; j < int8_block; ++j) q[j] = natural[(*source)[static_cast<size_t>(j)]];
    }
    if (magnitude) {
        for (int64_t j = 0; j < int8_block; ++j)
            magnitude[j] = static_cast<uint8_t>(q[j] < 0 ? -q[j] : q[j]);
    }
    return scale;
}

// The tokens rounded to int8 per block (int8_dot_applies), each block in the
// leaves' order, with their magnitudes where the leaves read them; the storage
// is the calling thread's and lives until its next call.
Int8Rows round_rows_to_int8(const QuantIsa& isa, const QuantMatrix& w, const float* x,
                            int64_t n_tokens, ThreadPool& pool) {
    const int64_t n_blocks = w.n_in / int8_block;
    thread_local std::vector<int8_t, AlignedAllocator<int8_t>> q_buffer;
    thread_local std::vector<float> scale_buffer;
    thread_local std::vector<int32_t> sum_buffer;
    thread_local std::vector<float> scaled_sum_buffer;
    thread_local std::vector<uint8_t, AlignedAllocator<uint8_t>> magnitude_buffer;
    const bool magnitudes = isa.int8_six_bit_magnitudes && int8_codes(w) == Int8Codes::six_bits;
    q_buffer.resize(static_cast<size_t>(n_tokens * w.n_in));
    if (magnitudes) magnitude_buffer.resize(q_buffer.size());
    scale_buffer.resize(static_cast<size_t>(n_tokens * n_blocks));
    sum_buffer.resize(scale_buffer.size());
    scaled_sum_buffer.resize(static_cast<size_t>(n_tokens));
    const std::array<uint8_t, int8_block>* source =
        isa.round_int8_block ? nullptr : slot_sources(isa, w.nbits);
    // Thread-local names inside the tasks would mean the workers' own buffers.
    int8_t* q = q_buffer.data();
    float* scale = scale_buffer.data();
    int32_t* sum = sum_buffer.data();
    float* scaled_sum = scaled_sum_buffer.data();
    uint8_t* magnitude = magnitudes ? magnitude_buffer.data() : nullptr;
    pool.run(n_tokens, [&](int64_t t, int) {
        float scaled = 0.0f;
        for (int64_t b = t * n_blocks; b < (t + 1) * n_blocks; ++b) {
            const float* xb = x + b * int8_block;
            int8_t* qb = q + b * int8_block;
            uint8_t* mb = magnitude ? magnitude + b * int8_block : nullptr;
            scale[b] = isa.round_int8_block ? isa.round_int8_block(xb, w.nbits, qb, mb, &sum[b])
                                            : round_block_to_int8(xb, source, qb, mb, &sum[b]);
            scaled += scale[b] * static_cast<float>(sum[b]);
        }
        scaled_sum[t] = scaled;
    });
    return {q, scale, sum, w.n_in, magnitude, scaled_sum};
}

// Up to quant_gemv_max_tokens: passes through the rows, each for as many
// tokens as the leaves decode a block for at once, or one token after another
// where they decode for one. Several matrices of one input go in one pool run,
// their tasks one matrix after another.
void matmul_gemv_int8(const QuantIsa& isa, std::span<const QuantMatrix> ws, const Int8Rows& x,
                      int64_t n_tokens, std::span<float* const> ys, ThreadPool& pool) {
    const bool passes = n_tokens > 1 && isa.gemv_int8_tokens;
    const int64_t per_pass = passes ? isa.int8_pass_tokens : 1;
    std::array<GemvSplit, quant_max_stacked> splits;
    std::array<int64_t, quant_max_stacked + 1> first_task{};
    for (size_t k = 0; k < ws.size(); ++k) {
        splits[k] = gemv_split(ws[k].n_out, ws[k].row_bytes(), passes ? n_tokens : 1, per_pass,
                               pool.size());
        first_task[k + 1] = first_task[k] + splits[k].n_tasks();
    }
    pool.run(first_task[ws.size()], [&](int64_t task, int) {
        size_t k = 0;
        while (task >= first_task[k + 1]) ++k;
        const QuantMatrix& w = ws[k];
        const GemvSplit& split = splits[k];
        const int64_t o0 = split.begin(task - first_task[k]),
                      o1 = split.begin(task - first_task[k] + 1);
        for (int64_t t = 0; t < n_tokens; t += per_pass) {
            const int64_t n = std::min(per_pass, n_tokens - t);
            float* y = ys[k] + t * w.n_out;
            passes ? isa.gemv_int8_tokens(w, x.token(t), n, o0, o1, y, w.n_out)
                   : isa.gemv_int8(w, x.token(t), o0, o1, y);
        }
    });
}

// More tokens: tasks of rows, each row decoded once for all the tokens.
void matmul_gemm_int8(const QuantIsa& isa, const QuantMatrix& w, const Int8Rows& x,
                      int64_t n_tokens, float* y, ThreadPool& pool) {
    constexpr int64_t rows_per_task = 64;
    pool.run(ceil_div(w.n_out, rows_per_task), [&](int64_t task, int) {
        const int64_t o0 = task * rows_per_task, o1 = std::min(w.n_out, o0 + rows_per_task);
        isa.gemm_int8(w, x, n_tokens, o0, o1, y, w.n_out);
    });
}

// ys[k] = ws[k] x by the integer leaves, for matrices that round x alike
// (one, or a stack sharing the rounding): x rounded once, then the passes
// for few tokens, the GEMM for more.
void matmul_int8(const QuantIsa& isa, std::span<const QuantMatrix> ws, const float* x,
                 int64_t n_tokens, std::span<float* const> ys, ThreadPool& pool) {
    const Int8Rows rows = round_rows_to_int8(isa, ws[0], x, n_tokens, pool);
    if (n_tokens <= quant_gemv_max_tokens)
        return matmul_gemv_int8(isa, ws, rows, n_tokens, ys, pool);
    for (size_t k = 0; k < ws.size(); ++k)
        matmul_gemm_int8(isa, ws[k], rows, n_tokens, ys[k], pool);
}

// Blocks of rows decoded to f32 (in parallel), multiplied by the f32 GEMM
// and copied into their columns of y.
void matmul_gemm(const QuantIsa& isa, const QuantMatrix& w, const float* x, int64_t n_tokens,
                 float* y, ThreadPool& pool) {
    const int64_t block = std::clamp<int64_t>(gemm_block_bytes / (4 * w.n_in) / 16 * 16, 16,
                                              ceil_div(w.n_out, 16) * 16);
    thread_local std::vector<float> rows_buffer, y_buffer;
    rows_buffer.resize(static_cast<size_t>(block * w.n_in));
    y_buffer.resize(static_cast<size_t>(block * n_tokens));
    // Thread-local names inside the tasks would mean the workers' own buffers.
    float* rows = rows_buffer.data();
    float* y_block = y_buffer.data();
    constexpr int64_t rows_per_task = 8;
    for (int64_t o0 = 0; o0 < w.n_out; o0 += block) {
        const int64_t n_rows = std::min(block, w.n_out - o0);
        pool.run(ceil_div(n_rows, rows_per_task), [&](int64_t task, int) {
            const int64_t r_end = std::min(n_rows, (task + 1) * rows_per_task);
            for (int64_t r = task * rows_per_task; r < r_end; ++r) {
                isa.decode_row(w, o0 + r, 0, w.n_in, rows + r * w.n_in);
            }
        });
        matmul_cached(Matrix{DType::f32, rows, n_rows, w.n_in}, x, n_tokens, y_block, pool);
        for (int64_t t = 0; t < n_tokens; ++t) {
            std::copy_n(y_block + t * n_rows, n_rows, y + t * w.n_out + o0);
        }
    }
}

#if ANELM_HAVE_X86_KERNELS
bool has_avx512_quant() {
    static const bool has = has_avx512_vnni() && __builtin_cpu_supports("avx512vbmi");
    return has;
}
#endif

}  // namespace

const QuantIsa* quant_active() {
    const Isa* isa = active();
#if ANELM_HAVE_X86_KERNELS
    // Every x86 dense table implies AVX2, FMA and F16C; the AVX-512 quant
    // leaves run beside the AVX-512 dense table (so ANELM_ISA=avx2 runs AVX2
    // throughout), where the processor also has VBMI and VNNI.
    if (isa) return isa == &avx512_isa && has_avx512_quant() ? &avx512_quant_isa : &avx2_quant_isa;
#endif
#if ANELM_HAVE_ARM_KERNELS
    if (isa == &neon_isa) return &neon_quant_isa;
#endif
    return nullptr;
}

std::vector<const QuantIsa*> quant_available() {
    std::vector<const QuantIsa*> tables;
    if (!active()) return tables;
#if ANELM_HAVE_X86_KERNELS
    if (has_avx512_quant()) tables.push_back(&avx512_quant_isa);
    tables.push_back(&avx2_quant_isa);
#endif
#if ANELM_HAVE_ARM_KERNELS
    tables.push_back(&neon_quant_isa);
#endif
    return tables;
}

void check_quant_matrix(const QuantMatrix& w) {
    if (w.n_out < 0 || w.n_in < 0) fail("quant_matmul: shape [{}, {}]", w.n_out, w.n_in);
    switch (w.kind) {
        case QuantKind::lut:
            if (w.nbits < 1 || w.nbits > 8 || w.nbits == 5 || w.nbits == 7)
                fail("quant_matmul: lut of {} bits, expected 1, 2, 3, 4, 6 or 8", w.nbits);
            if (w.group < 1) fail("quant_matmul: lut group of {} rows, expected >= 1", w.group);
            if (!w.lut && w.n_out > 0) fail("quant_matmul: lut matrix without tables");
            break;
        case QuantKind::int8:
        case QuantKind::int4:
            if (w.nbits != (w.kind == QuantKind::int8 ? 8 : 4))
                fail("quant_matmul: int{} matrix with {}-bit codes",
                     w.kind == QuantKind::int8 ? 8 : 4, w.nbits);
            if (!w.scales && w.n_out > 0) fail("quant_matmul: integer matrix without scales");
            break;
        case QuantKind::blocks:
            fail("quant_matmul: ggml blocks are multiplied by the block kernels");
    }
    if (!w.codes && w.n_out * w.n_in > 0) fail("quant_matmul: matrix without codes");
}

void quant_matmul(const QuantMatrix& w, const float* x, int64_t n_tokens, float* y,
                  ThreadPool& pool) {
    const QuantIsa* isa = quant_active();
    isa ? quant_matmul(*isa, w, x, n_tokens, y, pool) : ref::quant_matmul(w, x, n_tokens, y, pool);
}

void quant_matmul(const QuantIsa& isa, const QuantMatrix& w, const float* x, int64_t n_tokens,
                  float* y, ThreadPool& pool) {
    check_quant_matrix(w);
    if (n_tokens <= 0 || w.n_out <= 0) return;
    if (w.n_in == 0) return std::fill(y, y + n_tokens * w.n_out, 0.0f);
    const bool few_tokens = n_tokens <= quant_gemv_max_tokens;
    if (int8_leaves_apply(isa, w, n_tokens)) {
        matmul_int8(isa, {&w, 1}, x, n_tokens, {&y, 1}, pool);
    } else if (few_tokens) {
        matmul_gemv(isa, w, x, n_tokens, y, pool);
    } else {
        matmul_gemm(isa, w, x, n_tokens, y, pool);
    }
}

void quant_matmul_stacked(std::span<const QuantMatrix> ws, const float* x, int64_t n_tokens,
                          std::span<float* const> ys, ThreadPool& pool) {
    const QuantIsa* isa = quant_active();
    const auto shares_rounding = [&](const QuantMatrix& w) {
        return isa && int8_leaves_apply(*isa, w, n_tokens) && w.n_in == ws[0].n_in &&
               int8_codes(w) == int8_codes(ws[0]);
    };
    if (ws.size() < 2 || ws.size() > quant_max_stacked || n_tokens <= 0 || ws[0].n_in == 0 ||
        !std::all_of(ws.begin(), ws.end(), shares_rounding)) {
        for (size_t k = 0; k < ws.size(); ++k) quant_matmul(ws[k], x, n_tokens, ys[k], pool);
        return;
    }
    for (const QuantMatrix& w : ws) check_quant_matrix(w);
    matmul_int8(*isa, ws, x, n_tokens, ys, pool);
}

void quant_decode_row(const QuantMatrix& w, int64_t o, int64_t k0, int64_t n, float* out) {
    const QuantIsa* isa = quant_active();
    isa ? isa->decode_row(w, o, k0, n, out) : ref::quant_decode_row(w, o, k0, n, out);
}

}  // namespace anelm::kernels
