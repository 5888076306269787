// The scalar reference of the block-quantized products: for each block the
// integer sum of weight codes times rounded inputs, and its scaling, written
// out as llama.cpp's generic ggml_vec_dot_*_q8_* define them (layouts as in
// io/ggml_types.cpp). The leaves of every instruction set must agree with
// these sums up to the order of float additions.
#include <algorithm>
#include <array>
#include <vector>

#include "base/half.h"
#include "kernels/block_isa.h"

namespace anelm::kernels::ref {

namespace {

float half_at(const uint8_t* p) {
    return f16_to_f32(static_cast<uint16_t>(p[0] | p[1] << 8));
}

uint32_t u32_at(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
           static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

// One block of weights against its rounded inputs q (scale dx, q8_1's scaled
// sum sx, q8_K's sums of 16 in bsums): its term of the row's sum.
using BlockDot = float (*)(const uint8_t* b, const int8_t* q, float dx, float sx,
                           const int16_t* bsums);

// The 32-input blocks keep input j in the low nibble of byte j and input
// j + 16 in its high nibble; Q5's fifth bit of input j is bit j of a u32.
int nibble(const uint8_t* qs, int j) {
    return j < 16 ? qs[j] & 0xF : qs[j - 16] >> 4;
}

int q5_code(const uint8_t* qs, uint32_t qh, int j) {
    return nibble(qs, j) | static_cast<int>((qh >> j) & 1u) << 4;
}

// Q4_0: (d * dx) * sum (code - 8) q.
float q4_0_dot(const uint8_t* b, const int8_t* q, float dx, float, const int16_t*) {
    int sum = 0;
    for (int j = 0; j < 32; ++j) sum += (nibble(b + 2, j) - 8) * q[j];
    return half_at(b) * dx * static_cast<float>(sum);
}

// Q4_1: (d * dx) * sum code q + m * sx.
float q4_1_dot(const uint8_t* b, const int8_t* q, float dx, float sx, const int16_t*) {
    int sum = 0;
    for (int j = 0; j < 32; ++j) sum += nibble(b + 4, j) * q[j];
    return half_at(b) * dx * static_cast<float>(sum) + half_at(b + 2) * sx;
}

// Q5_0: (d * dx) * sum (code - 16) q.
float q5_0_dot(const uint8_t* b, const int8_t* q, float dx, float, const int16_t*) {
    const uint32_t qh = u32_at(b + 2);
    int sum = 0;
    for (int j = 0; j < 32; ++j) sum += (q5_code(b + 6, qh, j) - 16) * q[j];
    return half_at(b) * dx * static_cast<float>(sum);
}

// Q5_1: (d * dx) * sum code q + m * sx.
float q5_1_dot(const uint8_t* b, const int8_t* q, float dx, float sx, const int16_t*) {
    const uint32_t qh = u32_at(b + 4);
    int sum = 0;
    for (int j = 0; j < 32; ++j) sum += q5_code(b + 8, qh, j) * q[j];
    return half_at(b) * dx * static_cast<float>(sum) + half_at(b + 2) * sx;
}

// Q8_0: (d * dx) * sum code q.
float q8_0_dot(const uint8_t* b, const int8_t* q, float dx, float, const int16_t*) {
    int sum = 0;
    for (int j = 0; j < 32; ++j) sum += static_cast<int8_t>(b[2 + j]) * q[j];
    return half_at(b) * dx * static_cast<float>(sum);
}

// IQ4_NL: (d * dx) * sum table[code] q.
constexpr std::array<int8_t, 16> iq4_nl_values = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                  1,    13,   25,  38,  53,  69,  89,  113};

float iq4_nl_dot(const uint8_t* b, const int8_t* q, float dx, float, const int16_t*) {
    int sum = 0;
    for (int j = 0; j < 32; ++j) sum += iq4_nl_values[nibble(b + 2, j)] * q[j];
    return half_at(b) * dx * static_cast<float>(sum);
}

// Q2_K and Q3_K keep a half's 2-bit codes in 32 bytes: input 32*s + l of half
// h is bits 2s..2s+1 of byte 32h + l; inputs 16g..16g+15 (g < 16) share
// scale g.
int low2(const uint8_t* qs, int i) {
    const int h = i / 128, s = i % 128 / 32, l = i % 32;
    return (qs[32 * h + l] >> (2 * s)) & 3;
}

// Q2_K: scale byte g holds scale (low nibble) and min (high) of inputs
// 16g..; (dx * d) * sum_g scale_g sum code q - (dx * dmin) * sum_g min_g bsum_g.
float q2_k_dot(const uint8_t* b, const int8_t* q, float dx, float, const int16_t* bsums) {
    const uint8_t* scales = b;
    int isum = 0, msum = 0;
    for (int g = 0; g < 16; ++g) {
        int sum = 0;
        for (int i = 16 * g; i < 16 * g + 16; ++i) sum += low2(b + 16, i) * q[i];
        isum += (scales[g] & 0xF) * sum;
        msum += (scales[g] >> 4) * bsums[g];
    }
    return dx * half_at(b + 80) * static_cast<float>(isum) -
           dx * half_at(b + 82) * static_cast<float>(msum);
}

// Q3_K's sixteen 6-bit scales, biased by 32 (io/ggml_types.cpp has the layout).
int q3_k_scale(const uint8_t* s, int g) {
    const int low = g < 8 ? s[g] & 0xF : s[g - 8] >> 4;
    const int high = (s[8 + g % 4] >> (2 * (g / 4))) & 3;
    return (low | high << 4) - 32;
}

// Q3_K: input 32*s + l of half h has a high bit in bit 4h + s of mask byte l;
// code = low2 - 4 where it is clear. (d * dx) * sum_g scale_g sum code q.
float q3_k_dot(const uint8_t* b, const int8_t* q, float dx, float, const int16_t*) {
    const uint8_t* hmask = b;
    int isum = 0;
    for (int g = 0; g < 16; ++g) {
        int sum = 0;
        for (int i = 16 * g; i < 16 * g + 16; ++i) {
            const int h = i / 128, s = i % 128 / 32, l = i % 32;
            const bool high = (hmask[l] >> (4 * h + s)) & 1;
            sum += (low2(b + 32, i) - (high ? 0 : 4)) * q[i];
        }
        isum += q3_k_scale(b + 96, g) * sum;
    }
    return half_at(b + 108) * dx * static_cast<float>(isum);
}

// Q4_K/Q5_K's eight 6-bit scales and mins of 32 inputs each, in 12 bytes.
void k4_scale_min(const uint8_t* s, int j, int& scale, int& min) {
    if (j < 4) {
        scale = s[j] & 63;
        min = s[j + 4] & 63;
    } else {
        scale = (s[j + 4] & 0xF) | (s[j - 4] >> 6) << 4;
        min = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

// Q4_K (bits 4) and Q5_K (bits 5): input 32*s + l is nibble s % 2 of byte
// 32 * (s / 2) + l of the codes, Q5_K's fifth bit bit s of qh byte l.
// (d * dx) * sum_s scale_s sum code q - (dmin * dx) * sum_g min_{g/2} bsum_g.
template <int bits>
float k4_dot(const uint8_t* b, const int8_t* q, float dx, float, const int16_t* bsums) {
    const uint8_t* qh = b + 16;
    const uint8_t* qs = b + (bits == 5 ? 48 : 16);
    int isum = 0, msum = 0;
    for (int s = 0; s < 8; ++s) {
        int scale = 0, min = 0;
        k4_scale_min(b + 4, s, scale, min);
        int sum = 0;
        for (int l = 0; l < 32; ++l) {
            int code = (qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 0xF;
            if constexpr (bits == 5) code |= ((qh[l] >> s) & 1) << 4;
            sum += code * q[32 * s + l];
        }
        isum += scale * sum;
        msum += min * (bsums[2 * s] + bsums[2 * s + 1]);
    }
    return half_at(b) * dx * static_cast<float>(isum) -
           half_at(b + 2) * dx * static_cast<float>(msum);
}

// Q6_K: input 32*s + l of half h takes its low 4 bits from byte 64h +
// 32*(s%2) + l of ql (nibble s / 2), its top 2 from bits 2s of byte 32h + l
// of qh; int8 scale g for inputs 16g... (d * dx) * sum_g scale_g sum (code - 32) q.
float q6_k_dot(const uint8_t* b, const int8_t* q, float dx, float, const int16_t*) {
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const auto* scales = reinterpret_cast<const int8_t*>(b + 192);
    int isum = 0;
    for (int g = 0; g < 16; ++g) {
        int sum = 0;
        for (int i = 16 * g; i < 16 * g + 16; ++i) {
            const int h = i / 128, s = i % 128 / 32, l = i % 32;
            const int low = (ql[64 * h + 32 * (s % 2) + l] >> (4 * (s / 2))) & 0xF;
            const int high = (qh[32 * h + l] >> (2 * s)) & 3;
            sum += ((low | high << 4) - 32) * q[i];
        }
        isum += scales[g] * sum;
    }
    return half_at(b + 208) * dx * static_cast<float>(isum);
}

BlockDot block_dot(BlockType type) {
    switch (type) {
        case BlockType::q4_0:
            return q4_0_dot;
        case BlockType::q4_1:
            return q4_1_dot;
        case BlockType::q5_0:
            return q5_0_dot;
        case BlockType::q5_1:
            return q5_1_dot;
        case BlockType::q8_0:
            return q8_0_dot;
        case BlockType::q2_k:
            return q2_k_dot;
        case BlockType::q3_k:
            return q3_k_dot;
        case BlockType::q4_k:
            return k4_dot<4>;
        case BlockType::q5_k:
            return k4_dot<5>;
        case BlockType::q6_k:
            return q6_k_dot;
        case BlockType::iq4_nl:
            return iq4_nl_dot;
    }
    return nullptr;
}

}  // namespace

float block_row_dot(BlockType type, const uint8_t* row, const BlockActs& x) {
    const BlockLayout l = block_layout(type);
    const BlockDot dot = block_dot(type);
    // Each weight block meets one block of the rounded inputs (32 with 32, 256 with 256).
    float sum = 0.0f;
    for (int64_t b = 0; b < x.n_in / l.elems; ++b) {
        sum += dot(row + b * l.bytes, x.q + b * l.elems, x.d[b], x.s ? x.s[b] : 0.0f,
                   x.bsums ? x.bsums + b * (l.elems / act_sum_len) : nullptr);
    }
    return sum;
}

void block_matmul(const BlockMatrix& w, const float* x, int64_t n_tokens, float* y,
                  ThreadPool& pool) {
    check_block_matrix(w);
    const ActFormat f = act_format(w.type);
    const int64_t n_in = w.n_in, n_blocks = n_in / act_block(f), n_sums = n_in / act_sum_len;
    std::vector<int8_t> q(static_cast<size_t>(n_tokens * n_in));
    std::vector<float> d(static_cast<size_t>(n_tokens * n_blocks));
    std::vector<float> s(f == ActFormat::q8_1 ? d.size() : 0);
    std::vector<int16_t> bsums(f == ActFormat::q8_k ? static_cast<size_t>(n_tokens * n_sums) : 0);
    const BlockActs acts{q.data(),
                         d.data(),
                         s.empty() ? nullptr : s.data(),
                         bsums.empty() ? nullptr : bsums.data(),
                         n_in,
                         act_block(f)};
    for (int64_t t = 0; t < n_tokens; ++t) {
        round_token(f, x + t * n_in, n_in, q.data() + t * n_in, d.data() + t * n_blocks,
                    s.empty() ? nullptr : s.data() + t * n_blocks,
                    bsums.empty() ? nullptr : bsums.data() + t * n_sums);
    }
    constexpr int64_t rows_per_task = 16;
    pool.run((w.n_out + rows_per_task - 1) / rows_per_task, [&](int64_t task, int) {
        const int64_t o_end = std::min(w.n_out, (task + 1) * rows_per_task);
        for (int64_t o = task * rows_per_task; o < o_end; ++o) {
            for (int64_t t = 0; t < n_tokens; ++t)
                y[t * w.n_out + o] = block_row_dot(w.type, w.data + o * w.row_bytes, acts.token(t));
        }
    });
}

}  // namespace anelm::kernels::ref
