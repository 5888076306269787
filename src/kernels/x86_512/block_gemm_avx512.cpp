// AVX-512 VNNI GEMM leaves for prompts of ggml block-quantized weights
// (BlockIsa::gemm), each tile of rows decoded once for all the tokens.

// The VNNI instructions are these leaves' alone among the AVX-512 files they
// are compiled with (cmake/anelm_modules.cmake); block_active() checks for them.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512vnni"))), apply_to = function)
#else
#pragma GCC target("avx512vnni")
#endif
// GCC 12 flags its own _mm512_undefined_* inside AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/aligned_allocator.h"
#include "kernels/block_isa.h"
#include "kernels/x86_512/block_decode_avx512.h"

namespace anelm::kernels {

namespace {

// ---- Many tokens (BlockIsa::gemm) ----
//
// A tile of 16 rows is unpacked once into int8 weights, four inputs of the 16
// rows per 64-byte vector (dword lane r: row r), so that one vpdpbusd takes
// four inputs of a token, broadcast to every lane as unsigned bytes (x.qu,
// q + 128), against four inputs of each row. The 128s add 128 times the
// weights' sum, so each integer group's sum starts that far below zero. K
// types multiply each group's exact sum by its integer scale and scale the
// block's sum once, mins through q8_K's sums (vpdpwssd); 32-input types
// scale each block's sum. Tokens go gemm_tokens at a time through the tile.
constexpr int tile_rows = 16;
constexpr int gemm_tokens = 8;

// One row unpacked: its weights as int8 (signed, or the codes of types with
// mins), per integer group its scale (K types), per block d and dmin (or
// Q4_1/Q5_1's m), per 16 inputs the min (K types with mins).
struct RowUnpacked {
    int8_t* w;
    int32_t* scales;
    float* d;
    float* dmin;
    int16_t* mins;
};

// A tile: per row (lane) of each vector. w: n_in / 4 vectors of four inputs;
// start: per group -128 times its weights' sum; scales, d, dmin as above;
// mins: per block and pair of 16-input groups, both mins as int16.
struct Tile {
    int8_t* w;
    int32_t* start;
    int32_t* scales;
    float* d;
    float* dmin;
    int32_t* mins;
};

// The gemm traits of a 32-input type B.
template <class B>
struct Gemm32 {
    static constexpr int64_t group = 32, block = 32;
    static constexpr bool k = false, k_mins = false, q8_1_mins = B::has_min;
    static void unpack_row(const uint8_t* row, int64_t n_in, const RowUnpacked& u) {
        const int64_t n_blocks = n_in / 32;
        int64_t b = 0;
        if constexpr (B::nibbles) {
            for (; (n_blocks - b) * B::bytes >= 64; b += 2)
                _mm512_storeu_si512(u.w + 32 * b, pair_loaded<B>(row + b * B::bytes).w);
        }
        for (; b + 2 <= n_blocks; b += 2)
            _mm512_storeu_si512(u.w + 32 * b, pair_at_end<B, true>(row + b * B::bytes).w);
        if (b < n_blocks) {
            _mm256_storeu_si256(
                reinterpret_cast<__m256i*>(u.w + 32 * b),
                _mm512_castsi512_si256(pair_at_end<B, false>(row + b * B::bytes).w));
        }
        for (b = 0; b < n_blocks; ++b) {
            u.d[b] = half_at(row + b * B::bytes);
            u.dmin[b] = B::has_min ? half_at(row + b * B::bytes + 2) : 0.0f;
        }
    }
};

// The gemm traits of a K type B: the codes less B's offset as weights.
template <class B>
struct GemmK {
    static constexpr int64_t group = B::group, block = 256;
    static constexpr bool k = true, k_mins = B::has_min, q8_1_mins = false;
    static void unpack_row(const uint8_t* row, int64_t n_in, const RowUnpacked& u) {
        for (int64_t b = 0; b < n_in / 256; ++b) {
            const uint8_t* p = row + b * B::bytes;
            KBlock k;
            B::decode(p, k);
            for (int j = 0; j < 4; ++j) {
                _mm512_storeu_si512(u.w + 256 * b + 64 * j,
                                    _mm512_sub_epi8(k.codes[j], _mm512_set1_epi8(B::code_offset)));
            }
            u.d[b] = k.d;
            u.dmin[b] = B::has_min ? k.dmin : 0.0f;
            B::groups(p, u.scales + 256 / B::group * b, u.mins + 16 * b);
        }
    }
};

// y[(t0 + t) * ldy + r] for the T tokens from t0 and the rows of one tile.
template <class U, int T>
void tile_product(const Tile& tile, const BlockActs& x, int64_t t0, __mmask16 rows, float* y,
                  int64_t ldy) {
    const int64_t n_in = x.n_in, n_blocks = n_in / U::block, n_sums = n_in / act_sum_len;
    constexpr int64_t groups_per_block = U::block / U::group;
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
        __m512i isum[T];
        for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
        for (int64_t g = b * groups_per_block; g < (b + 1) * groups_per_block; ++g) {
            __m512i dot[T];
            const __m512i start = _mm512_load_si512(tile.start + 16 * g);
            for (int t = 0; t < T; ++t) dot[t] = start;
            for (int64_t k = g * U::group; k < (g + 1) * U::group; k += 4) {
                const __m512i wv = _mm512_load_si512(tile.w + 16 * k);
                for (int t = 0; t < T; ++t) {
                    const __m512i xb =
                        _mm512_set1_epi32(static_cast<int>(block_u32(x.qu + (t0 + t) * n_in + k)));
                    dot[t] = _mm512_dpbusd_epi32(dot[t], xb, wv);
                }
            }
            if constexpr (U::k) {
                const __m512i scale = _mm512_load_si512(tile.scales + 16 * g);
                for (int t = 0; t < T; ++t)
                    isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(dot[t], scale));
            } else {
                const __m512 d = _mm512_load_ps(tile.d + 16 * b);
                for (int t = 0; t < T; ++t) {
                    const int64_t at = (t0 + t) * n_blocks + b;
                    const __m512 scale = _mm512_mul_ps(d, _mm512_set1_ps(x.d[at]));
                    acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[t]), scale, acc[t]);
                    if constexpr (U::q8_1_mins) {
                        acc[t] = _mm512_fmadd_ps(_mm512_load_ps(tile.dmin + 16 * b),
                                                 _mm512_set1_ps(x.s[at]), acc[t]);
                    }
                }
            }
        }
        if constexpr (U::k) {
            const __m512 d = _mm512_load_ps(tile.d + 16 * b);
            for (int t = 0; t < T; ++t) {
                const float dx = x.d[(t0 + t) * n_blocks + b];
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]),
                                         _mm512_mul_ps(d, _mm512_set1_ps(dx)), acc[t]);
                if constexpr (U::k_mins) {
                    const int16_t* bsums = x.bsums + (t0 + t) * n_sums + 16 * b;
                    __m512i msum = _mm512_setzero_si512();
                    for (int j = 0; j < 8; ++j) {
                        msum = _mm512_dpwssd_epi32(
                            msum, _mm512_load_si512(tile.mins + 16 * (8 * b + j)),
                            _mm512_set1_epi32(static_cast<int>(
                                block_u32(reinterpret_cast<const uint8_t*>(bsums + 2 * j)))));
                    }
                    // Minus (dmin dx) times the mins' sum: the reference's rounding.
                    const __m512 dmin =
                        _mm512_mul_ps(_mm512_load_ps(tile.dmin + 16 * b), _mm512_set1_ps(dx));
                    acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), dmin, acc[t]);
                }
            }
        }
    }
    for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + (t0 + t) * ldy, rows, acc[t]);
}

// tile_product for 1 <= n <= T tokens.
template <class U, int T>
void tile_tokens(const Tile& tile, const BlockActs& x, int64_t t0, int64_t n, __mmask16 rows,
                 float* y, int64_t ldy) {
    if constexpr (T > 1) {
        if (n < T) return tile_tokens<U, T - 1>(tile, x, t0, n, rows, y, ldy);
    }
    tile_product<U, T>(tile, x, t0, rows, y, ldy);
}

// Rows o0.. o1 - 1 in tiles of 16, each unpacked and packed once for all tokens.
template <class U>
void gemm_rows(const BlockMatrix& w, const BlockActs& x, int64_t n_tokens, int64_t o0, int64_t o1,
               float* y, int64_t ldy) {
    const int64_t n_in = w.n_in, n_groups = n_in / U::group, n_blocks = n_in / U::block;
    const int64_t n_sums = n_in / act_sum_len;
    thread_local std::vector<int8_t, AlignedAllocator<int8_t>> rows_w, tile_w;
    thread_local std::vector<int32_t, AlignedAllocator<int32_t>> row_scales, tile_start,
        tile_scales, tile_mins;
    thread_local std::vector<float, AlignedAllocator<float>> row_d, row_dmin, tile_d, tile_dmin;
    thread_local std::vector<int16_t> row_mins;
    rows_w.resize(static_cast<size_t>(tile_rows * n_in));
    tile_w.resize(rows_w.size());
    row_scales.resize(static_cast<size_t>(tile_rows * n_groups));
    tile_start.resize(row_scales.size());
    tile_scales.resize(row_scales.size());
    row_d.resize(static_cast<size_t>(tile_rows * n_blocks));
    row_dmin.resize(row_d.size());
    tile_d.resize(row_d.size());
    tile_dmin.resize(row_d.size());
    row_mins.resize(static_cast<size_t>(tile_rows * n_sums));
    tile_mins.resize(static_cast<size_t>(tile_rows * n_sums / 2));
    const Tile tile{tile_w.data(), tile_start.data(), tile_scales.data(),
                    tile_d.data(), tile_dmin.data(),  tile_mins.data()};
    const __m512i row_starts =
        _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                           _mm512_set1_epi32(static_cast<int>(n_in)));
    for (int64_t o = o0; o < o1; o += tile_rows) {
        const int n_rows = static_cast<int>(std::min<int64_t>(tile_rows, o1 - o));
        for (int r = 0; r < tile_rows; ++r) {
            const RowUnpacked u{rows_w.data() + r * n_in, row_scales.data() + r * n_groups,
                                row_d.data() + r * n_blocks, row_dmin.data() + r * n_blocks,
                                row_mins.data() + r * n_sums};
            if (r < n_rows) {
                U::unpack_row(w.data + (o + r) * w.row_bytes, n_in, u);
            } else {
                // Rows past the matrix: zero weights and scales.
                std::memset(u.w, 0, static_cast<size_t>(n_in));
                std::fill(u.scales, u.scales + n_groups, 0);
                std::fill(u.d, u.d + n_blocks, 0.0f);
                std::fill(u.dmin, u.dmin + n_blocks, 0.0f);
                std::fill(u.mins, u.mins + n_sums, int16_t{0});
            }
        }
        // Four inputs of each row per lane; each group's weights summed as it goes.
        const __m512i ones = _mm512_set1_epi8(1);
        for (int64_t g = 0; g < n_groups; ++g) {
            __m512i sum = _mm512_setzero_si512();
            for (int64_t k = g * U::group; k < (g + 1) * U::group; k += 4) {
                const __m512i v = _mm512_i32gather_epi32(row_starts, rows_w.data() + k, 1);
                _mm512_store_si512(tile.w + 16 * k, v);
                sum = _mm512_dpbusd_epi32(sum, ones, v);
            }
            _mm512_store_si512(tile.start + 16 * g,
                               _mm512_mullo_epi32(sum, _mm512_set1_epi32(-128)));
        }
        for (int r = 0; r < tile_rows; ++r) {
            for (int64_t g = 0; g < n_groups; ++g)
                tile.scales[16 * g + r] = row_scales[r * n_groups + g];
            for (int64_t b = 0; b < n_blocks; ++b) {
                tile.d[16 * b + r] = row_d[r * n_blocks + b];
                tile.dmin[16 * b + r] = row_dmin[r * n_blocks + b];
            }
            for (int64_t j = 0; j < n_sums / 2; ++j) {
                const int16_t* m = row_mins.data() + r * n_sums + 2 * j;
                tile.mins[16 * j + r] =
                    static_cast<int32_t>(static_cast<uint16_t>(m[0]) |
                                         static_cast<uint32_t>(static_cast<uint16_t>(m[1])) << 16);
            }
        }
        const auto rows = static_cast<__mmask16>((1u << n_rows) - 1);
        for (int64_t t0 = 0; t0 < n_tokens; t0 += gemm_tokens) {
            tile_tokens<U, gemm_tokens>(tile, x, t0, std::min<int64_t>(gemm_tokens, n_tokens - t0),
                                        rows, y + o, ldy);
        }
    }
}

}  // namespace

// Passes decode a K block once per pass_tokens and keep the task's rows in
// L2, which outruns packing tiles up to 32 tokens (Q6_K: 48, its pass the
// cheapest); 32-input types gain from the tiles from 17 tokens on (2048 x
// 2048, two threads).
BlockGemv avx512_block_gemm(BlockType type, int64_t n_tokens) {
    const bool k_type = act_format(type) == ActFormat::q8_k;
    if (k_type && n_tokens < (type == BlockType::q6_k ? 48 : 32)) return nullptr;
    switch (type) {
        case BlockType::q4_0:
            return gemm_rows<Gemm32<Q4_0>>;
        case BlockType::q4_1:
            return gemm_rows<Gemm32<Q4_1>>;
        case BlockType::q5_0:
            return gemm_rows<Gemm32<Q5_0>>;
        case BlockType::q5_1:
            return gemm_rows<Gemm32<Q5_1>>;
        case BlockType::q8_0:
            return gemm_rows<Gemm32<Q8_0>>;
        case BlockType::iq4_nl:
            return gemm_rows<Gemm32<IQ4_NL>>;
        case BlockType::q2_k:
            return gemm_rows<GemmK<Q2_K>>;
        case BlockType::q3_k:
            return gemm_rows<GemmK<Q3_K>>;
        case BlockType::q4_k:
            return gemm_rows<GemmK<QK4<4>>>;
        case BlockType::q5_k:
            return gemm_rows<GemmK<QK4<5>>>;
        case BlockType::q6_k:
            return gemm_rows<GemmK<Q6_K>>;
    }
    return nullptr;
}

}  // namespace anelm::kernels

#if defined(__clang__)
#pragma clang attribute pop
#endif
