// AVX2 integer dot products for quantized matrices (int8_dot_applies).
// Without VNNI, vpmaddubsw multiplies unsigned by signed bytes into 16-bit
// pair sums. 4-bit codes look up their entries (|e| <= 63, int8_table_limit)
// offset by 64 and multiply them, unsigned, by the inputs as they are, 64
// times the token's scaled input sum (Int8Rows::scaled_sum) taken away from
// each row's sum; 6-bit codes multiply the inputs' magnitudes |q| <= 127
// (Int8Rows::magnitude) by their entries carrying the inputs' signs
// (vpsignb), and int8 codes, which may be -128, their magnitudes by the
// inputs carrying theirs. No pair sum (at most 2 * 128 * 127) saturates.
// 6-bit codes, read in the planes layout (int8_layout.cpp), index four
// 16-entry sub-tables by their low nibbles and two vpblendvb rounds pick the
// sub-table their high bits name.
#include "kernels/x86/int8_dot_avx2.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "base/aligned_allocator.h"
#include "kernels/int8_rows.h"
#include "kernels/x86/avx2.h"
#include "kernels/x86/round_avx2.h"

namespace anelm::kernels::avx2_int8 {

namespace {

using Codes = Int8Codes;

// A row's int8 entries in both lanes: one sub-table for 4-bit codes, four
// for 6-bit codes (entries 16s..16s+15 in sub[s]).
struct Table {
    __m256i sub[4];
};

// What 4-bit entries are offset by to be unsigned.
constexpr int nibble_offset = 64;

template <Codes C>
inline void load_table(const int8_t* entries, Table& t) {
    constexpr int n_sub = C == Codes::six_bits ? 4 : C == Codes::nibbles ? 1 : 0;
    for (int s = 0; s < n_sub; ++s) {
        t.sub[s] = _mm256_broadcastsi128_si256(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(entries + 16 * s)));
    }
    if constexpr (C == Codes::nibbles)
        t.sub[0] = _mm256_add_epi8(t.sub[0], _mm256_set1_epi8(nibble_offset));
}

inline __m256i load32(const void* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// _mm256_blendv_epi8(a, b, m): GCC 12 compiles the intrinsic to a compare of
// m with zero and then the blend, one more operation per 32 weights in a leaf
// bound by its operations (bench/README.md, "AVX2: prefetching 6-bit codes").
inline __m256i blend_by_sign(__m256i a, __m256i b, __m256i m) {
    __m256i r;
    asm("vpblendvb %3, %2, %1, %0" : "=x"(r) : "x"(a), "x"(b), "x"(m));
    return r;
}

// The entries of 32 six-bit codes: low nibbles in idx, bit 4 in the sign bit
// of bit4's bytes, bit 5 in that of bit5's.
inline __m256i lookup_six_bits(__m256i idx, __m256i bit4, __m256i bit5, const Table& t) {
    const __m256i low =
        blend_by_sign(_mm256_shuffle_epi8(t.sub[0], idx), _mm256_shuffle_epi8(t.sub[1], idx), bit4);
    const __m256i high =
        blend_by_sign(_mm256_shuffle_epi8(t.sub[2], idx), _mm256_shuffle_epi8(t.sub[3], idx), bit4);
    return blend_by_sign(low, high, bit5);
}

// The four runs of 32 int8 weights of one block of a row, in slot() order.
template <Codes C>
inline void block_weights(const uint8_t* p, const Table& t, __m256i w[4]) {
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    if constexpr (C == Codes::bytes) {
        for (int k = 0; k < 4; ++k) w[k] = load32(p + 32 * k);
        return;
    }
    __m256i idx[4];
    for (int h = 0; h < 2; ++h) {
        const __m256i v = load32(p + 32 * h);
        idx[2 * h] = _mm256_and_si256(v, low4);
        idx[2 * h + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
    }
    if constexpr (C == Codes::nibbles) {
        for (int k = 0; k < 4; ++k) w[k] = _mm256_shuffle_epi8(t.sub[0], idx[k]);
    } else {
        // Adding bytes to themselves moves each bit up by one, to the sign bit in turn.
        __m256i high = load32(p + 64);
        for (int k = 0; k < 4; ++k) {
            const __m256i bit5 = _mm256_add_epi8(high, high);
            w[k] = lookup_six_bits(idx[k], high, bit5, t);
            high = _mm256_add_epi8(bit5, bit5);
        }
    }
}

// Eight sums of four products of unsigned a and signed b bytes.
inline __m256i dot32(__m256i unsigned_a, __m256i signed_b) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(unsigned_a, signed_b), _mm256_set1_epi16(1));
}

// Eight sums of four products w q of the k-th 32 weights and inputs of a
// block at i: see the file's comment for each kind of code.
template <Codes C>
inline __m256i dot32_of(const __m256i* w, const __m256i* magnitude, int k, const Int8Rows& x,
                        int64_t i) {
    const __m256i q = load32(x.q + i);
    if constexpr (C == Codes::nibbles) return dot32(w[k], q);
    if constexpr (C == Codes::bytes) return dot32(magnitude[k], _mm256_sign_epi8(q, w[k]));
    return dot32(load32(x.magnitude + i), _mm256_sign_epi8(w[k], q));
}

// How far ahead 6-bit codes are prefetched. Their lookups make them the one
// leaf here slower than the memory, and with the hardware prefetchers alone
// the reads then fall behind too (bench/README.md, "AVX2: prefetching 6-bit
// codes"); the faster leaves read in order without, as on AVX-512
// ("Decode: one row at a time").
constexpr int64_t six_bit_prefetch_ahead = 3072;

// sums[t] = sum_b d_b * (block b of the row . q) for the T tokens of x, each
// block decoded once for all of them.
template <Codes C, int T>
void row_dot(const uint8_t* row, const Table& table, const Int8Rows& x, float* sums) {
    constexpr int64_t bb = int8_block_bytes<C>;
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    const int64_t n_in = x.n_in, n_blocks = n_in / int8_block;
    for (int64_t b = 0; b < n_blocks; ++b) {
        if constexpr (C == Codes::six_bits) {
            // Both cache lines a 96-byte block may span.
            const char* ahead =
                reinterpret_cast<const char*>(row + b * bb + six_bit_prefetch_ahead);
            _mm_prefetch(ahead, _MM_HINT_T0);
            _mm_prefetch(ahead + 64, _MM_HINT_T0);
        }
        __m256i w[4], magnitude[4];
        block_weights<C>(row + b * bb, table, w);
        if constexpr (C == Codes::bytes) {
            for (int k = 0; k < 4; ++k) magnitude[k] = _mm256_abs_epi8(w[k]);
        }
        for (int t = 0; t < T; ++t) {
            __m256i dot = _mm256_setzero_si256();
            for (int k = 0; k < 4; ++k) {
                const int64_t i = t * n_in + b * int8_block + 32 * k;
                dot = _mm256_add_epi32(dot, dot32_of<C>(w, magnitude, k, x, i));
            }
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot),
                                     _mm256_set1_ps(x.scale[t * n_blocks + b]), acc[t]);
        }
    }
    // The offset entries' excess, taken away once for the row rather than
    // block by block: three operations fewer per block in a leaf bound by its
    // operations (bench/README.md, "AVX2: the 4-bit offset once per row").
    for (int t = 0; t < T; ++t) {
        sums[t] = avx2::hsum(acc[t]);
        if constexpr (C == Codes::nibbles) sums[t] -= nibble_offset * x.scaled_sum[t];
    }
}

// Many tokens: a tile of 16 rows is decoded once into bytes, for each group
// of 4 inputs (in slot order) two vectors of 8 rows' 4 bytes, so that
// vpmaddubsw and vpmaddwd take 4 inputs of 8 rows against 4 inputs of a
// token broadcast to every lane. 4-bit entries are stored offset by 64 and
// each block's sums start 64 times its input sum below zero; 6-bit and int8
// entries are stored signed and multiplied as magnitudes against the inputs
// carrying their signs. Tokens go tile_tokens at a time through the tile:
// with 4, GCC 12 computes all the products of a step before adding them
// and spills the sums (a third slower).
constexpr int tile_rows = 16;
constexpr int tile_vectors = tile_rows / 8;
constexpr int tile_tokens = 3;

// Rows o..o + n_rows - 1 (n_rows <= 16) of codes decoded into rows_buffer
// (16 rows of n_in; rows past n_rows keep whatever they held, their sums are
// never stored) and transposed into packed, while the next tile's codes are
// fetched into L2: the products between two tiles leave the prefetchers idle.
template <Codes C>
void pack_tile(const QuantMatrix& w, const uint8_t* codes, int64_t o, int n_rows,
               uint8_t* rows_buffer, uint8_t* packed) {
    constexpr int64_t bb = int8_block_bytes<C>;
    const int64_t n_in = w.n_in, n_blocks = n_in / int8_block, row_bytes = w.row_bytes();
    Table table{};
    for (int r = 0; r < n_rows; ++r) {
        const int8_t* entries = int8_row_entries(w, o + r);
        if (entries) load_table<C>(entries, table);
        const uint8_t* row = codes + (o + r) * row_bytes;
        uint8_t* out = rows_buffer + r * n_in;
        for (int64_t b = 0; b < n_blocks; ++b) {
            for (int64_t line = 0; line < bb; line += 64)
                _mm_prefetch(
                    reinterpret_cast<const char*>(row + tile_rows * row_bytes + b * bb + line),
                    _MM_HINT_T1);
            __m256i v[4];
            block_weights<C>(row + b * bb, table, v);
            for (int k = 0; k < 4; ++k)
                _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + b * int8_block + 32 * k),
                                    v[k]);
        }
    }
    // 8 x 8 transposes of dwords (as floats: the bits only move).
    for (int64_t k = 0; k < n_in; k += 32) {
        for (int h = 0; h < tile_vectors; ++h) {
            __m256 a[8];
            for (int r = 0; r < 8; ++r)
                a[r] = _mm256_castsi256_ps(load32(rows_buffer + (8 * h + r) * n_in + k));
            avx2::Vec::transpose(a);
            for (int g = 0; g < 8; ++g)
                _mm256_storeu_ps(
                    reinterpret_cast<float*>(packed + (k + 4 * g) * tile_rows + 32 * h), a[g]);
        }
    }
}

// y[t * ldy + o + r] for T tokens from t0 and the n_rows rows of one packed
// tile, whose rows' scales are `scales`.
template <Codes C, int T>
void tile_product(const uint8_t* packed, const Int8Rows& x, int64_t t0, const float* scales,
                  int n_rows, float* y, int64_t ldy) {
    const int64_t n_in = x.n_in, n_blocks = n_in / int8_block;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[T][tile_vectors];
    for (int t = 0; t < T; ++t)
        for (int h = 0; h < tile_vectors; ++h) acc[t][h] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
        __m256i dot[T][tile_vectors];
        for (int t = 0; t < T; ++t) {
            const int32_t start =
                C == Codes::nibbles ? -nibble_offset * x.sum[(t0 + t) * n_blocks + b] : 0;
            for (int h = 0; h < tile_vectors; ++h) dot[t][h] = _mm256_set1_epi32(start);
        }
        const uint8_t* pw = packed + b * int8_block * tile_rows;
        const int8_t* xq = x.q + t0 * n_in + b * int8_block;
        for (int64_t k = 0; k < int8_block; k += 4) {
            __m256i wv[tile_vectors], magnitude[tile_vectors];
            for (int h = 0; h < tile_vectors; ++h) {
                wv[h] = load32(pw + k * tile_rows + 32 * h);
                if constexpr (C != Codes::nibbles) magnitude[h] = _mm256_abs_epi8(wv[h]);
            }
            for (int t = 0; t < T; ++t) {
                int32_t four;
                std::memcpy(&four, xq + t * n_in + k, 4);
                const __m256i q = _mm256_set1_epi32(four);
                for (int h = 0; h < tile_vectors; ++h) {
                    const __m256i pairs =
                        C == Codes::nibbles
                            ? _mm256_maddubs_epi16(wv[h], q)
                            : _mm256_maddubs_epi16(magnitude[h], _mm256_sign_epi8(q, wv[h]));
                    dot[t][h] = _mm256_add_epi32(dot[t][h], _mm256_madd_epi16(pairs, ones));
                }
            }
        }
        for (int t = 0; t < T; ++t) {
            const __m256 d = _mm256_set1_ps(x.scale[(t0 + t) * n_blocks + b]);
            for (int h = 0; h < tile_vectors; ++h)
                acc[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[t][h]), d, acc[t][h]);
        }
    }
    for (int t = 0; t < T; ++t) {
        alignas(32) float out[tile_rows];
        for (int h = 0; h < tile_vectors; ++h)
            _mm256_store_ps(out + 8 * h, _mm256_mul_ps(acc[t][h], _mm256_loadu_ps(scales + 8 * h)));
        std::copy_n(out, n_rows, y + (t0 + t) * ldy);
    }
}

using TileFn = void (*)(const uint8_t*, const Int8Rows&, int64_t, const float*, int, float*,
                        int64_t);

// tile_product<C, n> at [n - 1].
template <Codes C, int... N>
constexpr std::array<TileFn, sizeof...(N)> tile_products(std::integer_sequence<int, N...>) {
    return {tile_product<C, N + 1>...};
}

template <Codes C>
void gemm_rows(const QuantMatrix& w, const Int8Rows& x, int64_t n_tokens, int64_t o0, int64_t o1,
               float* y, int64_t ldy) {
    static constexpr auto products =
        tile_products<C>(std::make_integer_sequence<int, tile_tokens>());
    thread_local std::vector<uint8_t, AlignedAllocator<uint8_t>> rows_buffer, packed;
    rows_buffer.resize(static_cast<size_t>(tile_rows * w.n_in));
    packed.resize(rows_buffer.size());
    const uint8_t* codes = w.int8_layout == Int8Layout::packed ? w.codes : w.int8_codes;
    for (int64_t o = o0; o < o1; o += tile_rows) {
        const int n_rows = static_cast<int>(std::min<int64_t>(tile_rows, o1 - o));
        pack_tile<C>(w, codes, o, n_rows, rows_buffer.data(), packed.data());
        float scales[tile_rows] = {};
        for (int r = 0; r < n_rows; ++r) scales[r] = int8_row_scale(w, o + r);
        for (int64_t t0 = 0; t0 < n_tokens; t0 += tile_tokens) {
            const int64_t n = std::min<int64_t>(tile_tokens, n_tokens - t0);
            products[n - 1](packed.data(), x, t0, scales, n_rows, y + o, ldy);
        }
    }
}

// The matrix-vector leaf int8_gemv_rows drives (and, by its codes, the GEMM).
template <Codes C>
struct GemvLeaf {
    using Table = avx2_int8::Table;
    static constexpr Codes codes = C;
    template <int T>
    static constexpr int rows = 1;
    static constexpr int tokens = tokens_per_pass;
    static void load_table(const int8_t* entries, Table& t) {
        avx2_int8::load_table<C>(entries, t);
    }
    template <int R, int T>
    static void rows_dot(const uint8_t* row, int64_t, const Table* tables, const Int8Rows& x,
                         float* sums) {
        static_assert(R == 1);
        row_dot<C, T>(row, tables[0], x, sums);
    }
};

// A block rounded in order, inputs 32k..32k+31 in r[k], moved to 4-bit
// slots: the even inputs of each Span inputs first, then the odd ones.
template <int Span>
inline void nibble_order(__m256i r[4]) {
    static_assert(Span == 64 || Span == 128);
    const __m256i evens_first =
        _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, 0, 2, 4, 6, 8, 10,
                         12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    // Each lane's evens and odds in 64-bit halves, then each run's 16 evens
    // in its low lane and 16 odds in its high one.
    constexpr int halves_in_order = 0xd8;  // 64-bit elements 0, 2, 1, 3
    __m256i t[4];
    for (int k = 0; k < 4; ++k)
        t[k] = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(r[k], evens_first), halves_in_order);
    const __m256i evens01 = _mm256_permute2x128_si256(t[0], t[1], 0x20),
                  odds01 = _mm256_permute2x128_si256(t[0], t[1], 0x31),
                  evens23 = _mm256_permute2x128_si256(t[2], t[3], 0x20),
                  odds23 = _mm256_permute2x128_si256(t[2], t[3], 0x31);
    r[0] = evens01;
    r[1] = Span == 64 ? odds01 : evens23;
    r[2] = Span == 64 ? evens23 : odds01;
    r[3] = odds23;
}

template <int Span>
float round_block_in(const float* x, int nbits, int8_t* q, uint8_t* magnitude, int32_t* sum) {
    float m;
    const bool finite = avx2::max_abs_if_finite(x, int8_block, &m);
    __m256i r[int8_block / 32];
    float scale = NAN;
    *sum = 0;
    if (finite) {
        const __m256 inverse = _mm256_set1_ps(m > 0.0f ? 127.0f / m : 0.0f);
        for (int k = 0; k < int8_block / 32; ++k) {
            int sums[2];
            r[k] = avx2::round32(x + 32 * k, inverse, sums);
            *sum += sums[0] + sums[1];
        }
        scale = m / 127.0f;
    } else {
        for (__m256i& v : r) v = _mm256_setzero_si256();
    }
    if (nbits == 4) nibble_order<Span>(r);
    for (int k = 0; k < int8_block / 32; ++k) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * k), r[k]);
        if (magnitude) {
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(magnitude + 32 * k),
                                _mm256_abs_epi8(r[k]));
        }
    }
    return scale;
}

}  // namespace

float round_block(const float* x, int nbits, int8_t* q, uint8_t* magnitude, int32_t* sum) {
    return round_block_in<64>(x, nbits, q, magnitude, sum);
}

float round_block_evens_of_128(const float* x, int nbits, int8_t* q, uint8_t* magnitude,
                               int32_t* sum) {
    return round_block_in<128>(x, nbits, q, magnitude, sum);
}

int64_t slot(int nbits, int64_t e) {
    if (nbits != 4) return e;
    // Each 32 code bytes hold 64 inputs, the even ones in their low nibbles.
    const int64_t half = e / 64, r = e % 64;
    return half * 64 + r % 2 * 32 + r / 2;
}

void gemv(const QuantMatrix& w, const Int8Rows& x, int64_t o0, int64_t o1, float* y) {
    int8_gemv<GemvLeaf>(w, x, o0, o1, y);
}

void gemv_tokens(const QuantMatrix& w, const Int8Rows& x, int64_t n_tokens, int64_t o0, int64_t o1,
                 float* y, int64_t ldy) {
    int8_gemv_tokens<GemvLeaf>(w, x, n_tokens, o0, o1, y, ldy);
}

void gemm(const QuantMatrix& w, const Int8Rows& x, int64_t n_tokens, int64_t o0, int64_t o1,
          float* y, int64_t ldy) {
    int8_with_leaf<GemvLeaf>(
        w, [&]<class Leaf>() { gemm_rows<Leaf::codes>(w, x, n_tokens, o0, o1, y, ldy); });
}

}  // namespace anelm::kernels::avx2_int8
