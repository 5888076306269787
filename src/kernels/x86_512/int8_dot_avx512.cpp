// AVX-512 VNNI integer dot products for quantized matrices (int8_dot_applies).
// vpdpbusd multiplies unsigned by signed bytes, so the weights become
// unsigned: each int8 value plus 128, looked up by vpshufb (4-bit codes, the
// 16 entries repeated in each 128-bit lane), by vpermb (6-bit codes, 64
// entries in one register) or flipped in place (int8 codes). The extra 128
// adds 128 * sum q to a block's sum, so each block's accumulator starts that
// far below zero and the block stays exact in integers. gemv streams rows
// for a few tokens; gemm packs tiles of rows once for many.

// GCC 12 flags its own _mm512_undefined_* inside AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/x86_512/int8_dot_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/aligned_allocator.h"
#include "kernels/int8_rows.h"
#include "kernels/x86_512/avx512.h"

namespace anelm::kernels::avx512_int8 {

namespace {

using Codes = Int8Codes;

inline __m512i flip_sign_bits(__m512i v) {
    return _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80)));
}

// The unsigned table of int8 entries (null for int8 codes, which need none).
template <Codes C>
inline __m512i load_table(const int8_t* entries) {
    if constexpr (C == Codes::nibbles) {
        return flip_sign_bits(
            _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(entries))));
    } else if constexpr (C == Codes::six_bits) {
        return flip_sign_bits(_mm512_loadu_si512(entries));
    } else {
        return _mm512_setzero_si512();
    }
}

// vpermb pattern giving qword q the six bytes of codes 8q..8q+7 of 48 bytes
// that start `skip` bytes into a 64-byte load.
struct SixBitQwords {
    alignas(64) uint8_t bytes[64]{};
    constexpr explicit SixBitQwords(int skip) {
        for (int b = 0; b < 64; ++b)
            bytes[b] = static_cast<uint8_t>(skip + 6 * (b / 8) + (b % 8 < 6 ? b % 8 : 5));
    }
};
constexpr SixBitQwords six_bit_qwords[2] = {SixBitQwords(0), SixBitQwords(16)};

// 64 consecutive 6-bit codes, one per byte in the low 6 bits, from the 64
// bytes at p (pattern picks the 48 that hold them): vpmultishiftqb cuts each
// qword's 48 bits of codes at bits 0, 6, .., 42. A 48-byte masked load would
// read less, but masked loads that miss the cache stall: lut6 codes from
// memory went at a fifth of the speed of lut4 codes with them.
inline __m512i six_bit_codes(const uint8_t* p, const SixBitQwords& pattern) {
    const __m512i qwords =
        _mm512_permutexvar_epi8(_mm512_load_si512(pattern.bytes), _mm512_loadu_si512(p));
    return _mm512_multishift_epi64_epi8(_mm512_set1_epi64(0x2a241e18120c0600ll), qwords);
}

// The unsigned weights of one block of a row, in the order of slot().
template <Codes C>
inline void block_weights(const uint8_t* p, __m512i table, __m512i& first, __m512i& second) {
    if constexpr (C == Codes::nibbles) {
        const __m512i v = _mm512_loadu_si512(p), low4 = _mm512_set1_epi8(0x0f);
        first = _mm512_shuffle_epi8(table, _mm512_and_si512(v, low4));
        second = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(v, 4), low4));
    } else if constexpr (C == Codes::six_bits) {
        // Both loads stay inside the block's 96 bytes.
        first = _mm512_permutexvar_epi8(six_bit_codes(p, six_bit_qwords[0]), table);
        second = _mm512_permutexvar_epi8(six_bit_codes(p + 32, six_bit_qwords[1]), table);
    } else {
        first = flip_sign_bits(_mm512_loadu_si512(p));
        second = flip_sign_bits(_mm512_loadu_si512(p + 64));
    }
}

// How far ahead of the block being read the rows of several tokens are
// prefetched, in bytes along the matrix.
constexpr int64_t rows_prefetch_bytes = 4096;

// sums[r * T + t] = sum_b d_b * (block b of row r . q) for R consecutive rows
// and the T tokens of x, each block decoded once for all the tokens and each
// token's block loaded once for all the rows. One row alone is read in order
// with no software prefetch: one sequential stream per thread, which x86
// memory serves fastest (bench/README.md, "Decode: one row at a time"). R
// rows are R streams a row apart, which the hardware prefetchers leave
// waiting on memory, so each block also prefetches its share of the bytes
// rows_prefetch_bytes on (bench/README.md, "Decode: several sequences").
template <Codes C, int R, int T>
void rows_dot(const uint8_t* rows, int64_t row_bytes, const __m512i* tables, const Int8Rows& x,
              float* sums) {
    constexpr int64_t bb = int8_block_bytes<C>;
    __m512 acc[R][T];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    const int64_t n_in = x.n_in, n_blocks = n_in / int8_block;
    const int64_t prefetch_bytes = std::max(rows_prefetch_bytes, R * row_bytes);
    for (int64_t b = 0; b < n_blocks; ++b) {
        if constexpr (R > 1) {
            const uint8_t* ahead = rows + prefetch_bytes + b * R * bb;
#pragma GCC unroll 8
            for (int64_t line = 0; line < R * bb; line += 64)
                _mm_prefetch(reinterpret_cast<const char*>(ahead + line), _MM_HINT_T0);
        }
        __m512i w[R][2];
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
            block_weights<C>(rows + r * row_bytes + b * bb, tables[r], w[r][0], w[r][1]);
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
            const int8_t* q = x.q + t * n_in + b * int8_block;
            const int64_t k = t * n_blocks + b;
            const __m512i start = _mm512_maskz_set1_epi32(1, -128 * x.sum[k]);
            const __m512i q0 = _mm512_loadu_si512(q), q1 = _mm512_loadu_si512(q + 64);
            const __m512 d = _mm512_set1_ps(x.scale[k]);
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) {
                const __m512i dot =
                    _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(start, w[r][0], q0), w[r][1], q1);
                acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), d, acc[r][t]);
            }
        }
    }
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) sums[r * T + t] = _mm512_reduce_add_ps(acc[r][t]);
}

// Many tokens: a tile of 16 rows is packed once as unsigned weights, for each
// group of 4 inputs (in slot order) 16 dwords, one per row, so that one
// vpdpbusd takes 4 inputs of 16 rows against 4 inputs of a token broadcast
// to every lane. Tokens go tile_tokens at a time through the packed tile.
constexpr int tile_rows = 16;
constexpr int tile_tokens = 12;

// Rows o.. o + n_rows - 1 (n_rows <= 16) packed into n_in * 16 bytes; rows
// past n_rows are zero weights (128). rows_buffer holds 16 rows of n_in. The
// rows are decoded in order (one stream), then transposed, while the next tile's are fetched
// into L2: the products between two tiles leave the hardware prefetchers idle.
template <Codes C>
void pack_tile(const QuantMatrix& w, int64_t o, int n_rows, uint8_t* rows_buffer, uint8_t* packed) {
    const int64_t n_in = w.n_in, n_blocks = n_in / int8_block;
    for (int r = 0; r < tile_rows; ++r) {
        uint8_t* out = rows_buffer + r * n_in;
        if (r >= n_rows) {
            std::memset(out, 128, static_cast<size_t>(n_in));
            continue;
        }
        const __m512i table = load_table<C>(int8_row_entries(w, o + r));
        const uint8_t* row = w.codes + (o + r) * w.row_bytes();
        for (int64_t b = 0; b < n_blocks; ++b) {
            const uint8_t* codes = row + b * int8_block_bytes<C>;
            for (int64_t line = 0; line < int8_block_bytes<C>; line += 64)
                _mm_prefetch(
                    reinterpret_cast<const char*>(codes + tile_rows * w.row_bytes() + line),
                    _MM_HINT_T1);
            __m512i first, second;
            block_weights<C>(codes, table, first, second);
            _mm512_storeu_si512(out + b * int8_block, first);
            _mm512_storeu_si512(out + b * int8_block + 64, second);
        }
    }
    // 16 x 16 transposes of dwords (as floats: the bits only move).
    for (int64_t k = 0; k < n_in; k += 64) {
        __m512 a[tile_rows];
        for (int r = 0; r < tile_rows; ++r)
            a[r] = _mm512_castsi512_ps(_mm512_loadu_si512(rows_buffer + r * n_in + k));
        avx512::Vec::transpose(a);
        for (int g = 0; g < 16; ++g)
            _mm512_storeu_si512(packed + (k + 4 * g) * tile_rows, _mm512_castps_si512(a[g]));
    }
}

// y[t * ldy + o + r] for T tokens from t0 and the rows of one packed tile.
template <int T>
void tile_product(const uint8_t* packed, const Int8Rows& x, int64_t t0, __m512 scales,
                  __mmask16 rows, float* y, int64_t ldy) {
    const int64_t n_in = x.n_in, n_blocks = n_in / int8_block;
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
        __m512i dot[T];
        for (int t = 0; t < T; ++t)
            dot[t] = _mm512_set1_epi32(-128 * x.sum[(t0 + t) * n_blocks + b]);
        const uint8_t* pw = packed + b * int8_block * tile_rows;
        const int8_t* xq = x.q + t0 * n_in + b * int8_block;
        for (int64_t k = 0; k < int8_block; k += 4) {
            const __m512i wv = _mm512_loadu_si512(pw + k * tile_rows);
            for (int t = 0; t < T; ++t) {
                int32_t four;
                std::memcpy(&four, xq + t * n_in + k, 4);
                dot[t] = _mm512_dpbusd_epi32(dot[t], wv, _mm512_set1_epi32(four));
            }
        }
        for (int t = 0; t < T; ++t) {
            const __m512 d = _mm512_set1_ps(x.scale[(t0 + t) * n_blocks + b]);
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[t]), d, acc[t]);
        }
    }
    for (int t = 0; t < T; ++t) {
        _mm512_mask_storeu_ps(y + (t0 + t) * ldy, rows, _mm512_mul_ps(acc[t], scales));
    }
}

using TileFn = void (*)(const uint8_t*, const Int8Rows&, int64_t, __m512, __mmask16, float*,
                        int64_t);
constexpr TileFn tile_products[tile_tokens] = {
    tile_product<1>, tile_product<2>,  tile_product<3>,  tile_product<4>,
    tile_product<5>, tile_product<6>,  tile_product<7>,  tile_product<8>,
    tile_product<9>, tile_product<10>, tile_product<11>, tile_product<12>};

template <Codes C>
void gemm_rows(const QuantMatrix& w, const Int8Rows& x, int64_t n_tokens, int64_t o0, int64_t o1,
               float* y, int64_t ldy) {
    thread_local std::vector<uint8_t, AlignedAllocator<uint8_t>> rows_buffer, packed;
    rows_buffer.resize(static_cast<size_t>(tile_rows * w.n_in));
    packed.resize(rows_buffer.size());
    for (int64_t o = o0; o < o1; o += tile_rows) {
        const int n_rows = static_cast<int>(std::min<int64_t>(tile_rows, o1 - o));
        pack_tile<C>(w, o, n_rows, rows_buffer.data(), packed.data());
        alignas(64) float scales[tile_rows] = {};
        for (int r = 0; r < n_rows; ++r) scales[r] = int8_row_scale(w, o + r);
        const auto rows = static_cast<__mmask16>((1u << n_rows) - 1);
        for (int64_t t0 = 0; t0 < n_tokens; t0 += tile_tokens) {
            const int64_t n = std::min<int64_t>(tile_tokens, n_tokens - t0);
            tile_products[n - 1](packed.data(), x, t0, _mm512_load_ps(scales), rows, y + o, ldy);
        }
    }
}

// The matrix-vector leaf int8_gemv_rows drives: one token row by row (its
// own stream); several tokens four rows at a time, so that each token's block
// is loaded once for four rows, or two rows from five tokens on, where four
// rows' accumulators would not fit in the 32 registers.
template <Codes C>
struct GemvLeaf {
    using Table = __m512i;
    template <int T>
    static constexpr int rows = T == 1   ? 1
                                : T <= 4 ? 4
                                         : 2;
    static constexpr int tokens = tokens_per_pass;
    static void load_table(const int8_t* entries, Table& t) {
        t = avx512_int8::load_table<C>(entries);
    }
    template <int R, int T>
    static void rows_dot(const uint8_t* rows, int64_t row_bytes, const Table* tables,
                         const Int8Rows& x, float* sums) {
        avx512_int8::rows_dot<C, R, T>(rows, row_bytes, tables, x, sums);
    }
};

}  // namespace

int64_t slot(int nbits, int64_t e) {
    // A block's 64 code bytes hold the even inputs in their low nibbles.
    return nbits == 4 ? e % 2 * (int8_block / 2) + e / 2 : e;
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
    if (w.kind == QuantKind::int8) return gemm_rows<Codes::bytes>(w, x, n_tokens, o0, o1, y, ldy);
    if (w.nbits == 6) return gemm_rows<Codes::six_bits>(w, x, n_tokens, o0, o1, y, ldy);
    gemm_rows<Codes::nibbles>(w, x, n_tokens, o0, o1, y, ldy);
}

}  // namespace anelm::kernels::avx512_int8
