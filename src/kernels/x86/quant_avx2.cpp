// AVX2 + FMA + F16C leaves for quantized matrices. 4-bit codes (LUT4, int4)
// decode 64 at a time: the nibbles index byte planes of the f32 table with
// vpshufb (bytes 1-3; byte 0 of an f16 value widened to f32 is zero) and two
// rounds of byte / word unpacks rebuild the f32 values. 6-bit codes decode 32
// at a time: four 16-entry sub-tables of f16 byte planes, the look-ups XOR-ed,
// F16C widens. 8-bit tables are read one code at a time (gathers are slower).
// Other widths and tails go 8 at a time: shifts pull the codes into lanes, a
// lane permute looks them up. int8 rows convert directly. Integer rows are
// summed on the codes and scaled once at the end. The integer dot products
// are in int8_dot_avx2.cpp.

#include "kernels/quant_isa.h"
#include "kernels/vec_quant.h"
#include "kernels/x86/avx2.h"
#include "kernels/x86/int8_dot_avx2.h"

namespace anelm::kernels::avx2 {

namespace {

// The values of one row's codes: f32 for the 8-wide path, byte planes for
// the block paths. f32_planes[b]: byte b + 1 of the 16 f32 entries (4 bits).
// lo[s] / hi[s]: low / high bytes of the f16 entries 16s..16s+15 (6 bits),
// each XOR-ed with the sub-table before, so that XOR-ing the four look-ups
// leaves exactly the entry of the code. Every plane is repeated in both lanes.
struct RowTable {
    alignas(32) float values[256];
    __m256i f32_planes[3];
    __m256i lo[4];
    __m256i hi[4];
};

// Low and high bytes of 16 f16 entries.
inline void split_f16_planes(const uint16_t* entries, __m256i& lo, __m256i& hi) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(entries));
    const __m256i even_odd = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
                                              0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    // qwords: low bytes 0-7, low bytes 8-15, high bytes 0-7, high bytes 8-15
    const __m256i p = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(v, even_odd), 0xd8);
    lo = _mm256_permute2x128_si256(p, p, 0x00);
    hi = _mm256_permute2x128_si256(p, p, 0x11);
}

// Bytes 1-3 of 16 f32 entries as three planes, each repeated in both lanes.
inline void split_f32_planes(__m256 e0_7, __m256 e8_15, __m256i planes[3]) {
    // Per lane: bytes 1 of its four entries, then bytes 2, then bytes 3.
    const __m256i gather =
        _mm256_setr_epi8(1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, -1, -1, -1, -1, 1, 5, 9, 13, 2, 6,
                         10, 14, 3, 7, 11, 15, -1, -1, -1, -1);
    // dwords: byte-1 runs of both lanes, byte-2 runs, byte-3 runs
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const __m256i a =
        _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(_mm256_castps_si256(e0_7), gather), order);
    const __m256i b =
        _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(_mm256_castps_si256(e8_15), gather), order);
    const __m256i lo = _mm256_unpacklo_epi64(a, b), hi = _mm256_unpackhi_epi64(a, b);
    planes[0] = _mm256_permute2x128_si256(lo, lo, 0x00);
    planes[1] = _mm256_permute2x128_si256(hi, hi, 0x00);
    planes[2] = _mm256_permute2x128_si256(lo, lo, 0x11);
}

void load_table(const uint16_t* f16, int nbits, RowTable& t) {
    const int n = 1 << nbits;
    if (n < 8) {
        for (int k = 0; k < n; ++k) t.values[k] = _cvtsh_ss(f16[k]);
    }
    for (int k = 0; k + 8 <= n; k += 8) {
        _mm256_store_ps(
            t.values + k,
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(f16 + k))));
    }
    if (nbits == 4)
        split_f32_planes(_mm256_load_ps(t.values), _mm256_load_ps(t.values + 8), t.f32_planes);
    if (nbits == 6) {
        for (int s = 0; s < 4; ++s) split_f16_planes(f16 + 16 * s, t.lo[s], t.hi[s]);
        for (int s = 3; s > 0; --s) {
            t.lo[s] = _mm256_xor_si256(t.lo[s], t.lo[s - 1]);
            t.hi[s] = _mm256_xor_si256(t.hi[s], t.hi[s - 1]);
        }
    }
}

// The first N bytes at p as a little-endian integer, built in registers.
template <int N>
inline uint64_t read_bytes(const uint8_t* p) {
    uint64_t u = 0;
    for (int b = 0; b < N; ++b) u |= static_cast<uint64_t>(p[b]) << (8 * b);
    return u;
}

// Codes i..i+7 (i a multiple of 8, p = row + i / 8 * NBITS) as 32-bit lanes.
// Reads exactly the NBITS bytes that hold them.
template <int NBITS>
inline __m256i codes8(const uint8_t* p) {
    if constexpr (NBITS == 8) {
        return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    } else if constexpr (NBITS == 6) {
        const uint64_t u = read_bytes<6>(p);
        const auto lo = static_cast<int>(u & 0xffffff), hi = static_cast<int>(u >> 24);
        const __m256i v = _mm256_setr_epi32(lo, lo, lo, lo, hi, hi, hi, hi);
        return _mm256_and_si256(_mm256_srlv_epi32(v, _mm256_setr_epi32(0, 6, 12, 18, 0, 6, 12, 18)),
                                _mm256_set1_epi32(63));
    } else {
        const auto u = static_cast<int>(read_bytes<NBITS>(p));
        const __m256i shifts = _mm256_setr_epi32(0, NBITS, 2 * NBITS, 3 * NBITS, 4 * NBITS,
                                                 5 * NBITS, 6 * NBITS, 7 * NBITS);
        return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(u), shifts),
                                _mm256_set1_epi32((1 << NBITS) - 1));
    }
}

// Eight code values (natural order) from element i (a multiple of 8).
template <int NBITS, bool INT8>
inline __m256 values8(const uint8_t* row, int64_t i, const RowTable& t) {
    const uint8_t* p = row + i / 8 * NBITS;
    if constexpr (INT8) {
        return _mm256_cvtepi32_ps(
            _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
    } else {
        const __m256i idx = codes8<NBITS>(p);
        if constexpr (NBITS <= 3) {
            return _mm256_permutevar8x32_ps(_mm256_load_ps(t.values), idx);
        } else if constexpr (NBITS == 4) {
            const __m256 low = _mm256_permutevar8x32_ps(_mm256_load_ps(t.values), idx);
            const __m256 high = _mm256_permutevar8x32_ps(_mm256_load_ps(t.values + 8), idx);
            return _mm256_blendv_ps(low, high, _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)));
        } else {
            return _mm256_i32gather_ps(t.values, idx, 4);
        }
    }
}

// The f32 entries for 32 nibble codes (one per byte), as four runs of eight
// in block order: run j holds bytes 4j..4j+3 of each lane.
inline void lookup_nibbles(__m256i idx, const RowTable& t, __m256 w[4]) {
    const __m256i b1 = _mm256_shuffle_epi8(t.f32_planes[0], idx);
    const __m256i b2 = _mm256_shuffle_epi8(t.f32_planes[1], idx);
    const __m256i b3 = _mm256_shuffle_epi8(t.f32_planes[2], idx);
    const __m256i zero = _mm256_setzero_si256();
    const __m256i l01 = _mm256_unpacklo_epi8(zero, b1), h01 = _mm256_unpackhi_epi8(zero, b1);
    const __m256i l23 = _mm256_unpacklo_epi8(b2, b3), h23 = _mm256_unpackhi_epi8(b2, b3);
    w[0] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(l01, l23));
    w[1] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(l01, l23));
    w[2] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(h01, h23));
    w[3] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(h01, h23));
}

// The f16 entries for 32 six-bit codes (one per byte), widened to four runs
// of eight f32 in block order: bytes 0-7 and 16-23 of the lanes, then 8-15, 24-31.
inline void lookup_6bit(__m256i idx, const RowTable& t, __m256 w[4]) {
    __m256i l = _mm256_shuffle_epi8(t.lo[0], idx), h = _mm256_shuffle_epi8(t.hi[0], idx);
    for (int s = 1; s < 4; ++s) {
        // Codes below 16s go negative: vpshufb gives 0 for them.
        const __m256i shifted = _mm256_sub_epi8(idx, _mm256_set1_epi8(static_cast<char>(16 * s)));
        l = _mm256_xor_si256(l, _mm256_shuffle_epi8(t.lo[s], shifted));
        h = _mm256_xor_si256(h, _mm256_shuffle_epi8(t.hi[s], shifted));
    }
    const __m256i a = _mm256_unpacklo_epi8(l, h), b = _mm256_unpackhi_epi8(l, h);
    w[0] = _mm256_cvtph_ps(_mm256_castsi256_si128(a));
    w[1] = _mm256_cvtph_ps(_mm256_extracti128_si256(a, 1));
    w[2] = _mm256_cvtph_ps(_mm256_castsi256_si128(b));
    w[3] = _mm256_cvtph_ps(_mm256_extracti128_si256(b, 1));
}

// 32 six-bit codes (24 bytes at p) as one byte each, in natural order.
inline __m256i unpack_6bit(const uint8_t* p) {
    // Lane 0 takes bytes 0-11, lane 1 bytes 12-23 (loaded from p + 8), three per dword.
    const __m256i v = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(p + 8),
                                          reinterpret_cast<const __m128i*>(p));
    const __m256i d = _mm256_shuffle_epi8(
        v, _mm256_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1,  //
                            4, 5, 6, -1, 7, 8, 9, -1, 10, 11, 12, -1, 13, 14, 15, -1));
    // Each dword's 24 bits hold four codes; move code k to byte k.
    const __m256i c0 = _mm256_and_si256(d, _mm256_set1_epi32(0x3f));
    const __m256i c1 = _mm256_and_si256(_mm256_slli_epi32(d, 2), _mm256_set1_epi32(0x3f00));
    const __m256i c2 = _mm256_and_si256(_mm256_slli_epi32(d, 4), _mm256_set1_epi32(0x3f0000));
    const __m256i c3 = _mm256_and_si256(_mm256_slli_epi32(d, 6), _mm256_set1_epi32(0x3f000000));
    return _mm256_or_si256(_mm256_or_si256(c0, c1), _mm256_or_si256(c2, c3));
}

// Codes are streamed once: ask for them this far ahead of use, which the
// row-by-row pattern otherwise leaves to the hardware prefetcher alone.
constexpr int64_t prefetch_bytes = 2048;

inline void prefetch(const uint8_t* p) {
    _mm_prefetch(reinterpret_cast<const char*>(p + prefetch_bytes), _MM_HINT_T0);
}

// A accumulators per token: enough independent FMA chains without spilling.
template <int T>
constexpr int n_acc = T == 1 ? 4 : 2;

// acc[t] += w[j] * (eight inputs of token t at x + t * n_in + 8 j), j < 4.
template <int T>
inline void fma32(const __m256 w[4], const float* x, int64_t n_in, __m256 (&acc)[T][n_acc<T>]) {
    for (int j = 0; j < 4; ++j) {
        for (int t = 0; t < T; ++t) {
            acc[t][j % n_acc<T>] =
                _mm256_fmadd_ps(w[j], _mm256_loadu_ps(x + t * n_in + 8 * j), acc[t][j % n_acc<T>]);
        }
    }
}

// sums[t] = sum_i xb[t * n_in + i] * value(code i) over one row.
template <int NBITS, bool INT8, int T>
void row_dot(const uint8_t* row, int64_t n_in, const RowTable& tab, const float* xb, float* sums) {
    constexpr int A = n_acc<T>;
    __m256 acc[T][A];
    for (int t = 0; t < T; ++t) {
        for (int a = 0; a < A; ++a) acc[t][a] = _mm256_setzero_ps();
    }
    int64_t i = 0;
    __m256 w[4];
    if constexpr (NBITS == 4 && !INT8) {
        const __m256i nibble = _mm256_set1_epi8(0x0f);
        for (; i + 64 <= n_in; i += 64) {
            prefetch(row + i / 2);
            const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + i / 2));
            lookup_nibbles(_mm256_and_si256(v, nibble), tab, w);
            fma32<T>(w, xb + i, n_in, acc);
            lookup_nibbles(_mm256_and_si256(_mm256_srli_epi16(v, 4), nibble), tab, w);
            fma32<T>(w, xb + i + 32, n_in, acc);
        }
    } else if constexpr (NBITS == 6) {
        for (; i + 32 <= n_in; i += 32) {
            prefetch(row + i / 8 * 6);
            lookup_6bit(unpack_6bit(row + i / 8 * 6), tab, w);
            fma32<T>(w, xb + i, n_in, acc);
        }
    } else if constexpr (NBITS == 8 && !INT8) {
        alignas(32) float values[32];
        for (; i + 32 <= n_in; i += 32) {
            for (int j = 0; j < 32; ++j) values[j] = tab.values[row[i + j]];
            for (int j = 0; j < 4; ++j) w[j] = _mm256_load_ps(values + 8 * j);
            fma32<T>(w, xb + i, n_in, acc);
        }
    }
    for (; i + 32 <= n_in; i += 32) {
        if constexpr (INT8) prefetch(row + i);
        for (int j = 0; j < 4; ++j) w[j] = values8<NBITS, INT8>(row, i + 8 * j, tab);
        fma32<T>(w, xb + i, n_in, acc);
    }
    for (; i + 8 <= n_in; i += 8) {
        const __m256 v = values8<NBITS, INT8>(row, i, tab);
        for (int t = 0; t < T; ++t) {
            acc[t][0] = _mm256_fmadd_ps(v, _mm256_loadu_ps(xb + t * n_in + i), acc[t][0]);
        }
    }
    for (int t = 0; t < T; ++t) {
        __m256 s = acc[t][0];
        for (int a = 1; a < A; ++a) s = _mm256_add_ps(s, acc[t][a]);
        sums[t] = hsum(s);
    }
    const int64_t row_bytes = (n_in * NBITS + 7) / 8;
    for (; i < n_in; ++i) {
        const uint32_t code = packed_code_at(row, row_bytes, i, NBITS);
        const float v = INT8 ? static_cast<float>(static_cast<int8_t>(code)) : tab.values[code];
        for (int t = 0; t < T; ++t) sums[t] += v * xb[t * n_in + i];
    }
}

template <int NBITS, bool INT8>
void decode(const uint8_t* row, int64_t row_bytes, int64_t k0, int64_t n, const RowTable& tab,
            float scale, float* out) {
    const __m256 vscale = _mm256_set1_ps(scale);
    const int64_t end = k0 + n;
    int64_t i = k0;
    const auto scalar = [&](int64_t i) {
        const uint32_t code = packed_code_at(row, row_bytes, i, NBITS);
        const float v = INT8 ? static_cast<float>(static_cast<int8_t>(code)) : tab.values[code];
        out[i - k0] = v * scale;
    };
    for (; i < end && i % 8 != 0; ++i) scalar(i);
    for (; i + 8 <= end; i += 8) {
        _mm256_storeu_ps(out + (i - k0), _mm256_mul_ps(values8<NBITS, INT8>(row, i, tab), vscale));
    }
    for (; i < end; ++i) scalar(i);
}

// Block order (quant_isa.h): 4-bit blocks of 64 are the 32 low nibbles of a
// 32-byte load, then the 32 high ones, each as the runs a byte then word
// unpack yields (bytes 0-3 and 16-19, 4-7 and 20-23, ...); 6-bit blocks of 32
// are the runs of one byte unpack (bytes 0-7, 16-23, 8-15, 24-31).
int64_t block_len(int nbits) {
    return nbits == 4 ? 64 : nbits == 6 ? 32 : 0;
}

int64_t block_slot(int nbits, int64_t e) {
    if (nbits == 4) {
        const int64_t b = e >> 1;  // byte b holds elements 2b (low nibble) and 2b + 1
        return (e & 1) * 32 + ((b >> 2) & 3) * 8 + (b >> 4) * 4 + (b & 3);
    }
    return (e & ~int64_t{24}) | ((e >> 1) & 8) | ((e << 1) & 16);  // bits 3 and 4 swapped
}

constexpr int quant_tokens = 4;

// What vec_quant.h's shared walk needs of this instruction set besides
// load_table, row_dot and decode.
struct Kit {
    using RowTable = avx2::RowTable;
    static constexpr int tokens = quant_tokens;
    static float f16_scale(uint16_t h) { return _cvtsh_ss(h); }
};

using Leaves = VecQuant<Kit>;

}  // namespace

}  // namespace anelm::kernels::avx2

namespace anelm::kernels {

const QuantIsa avx2_quant_isa = {
    .name = "avx2",
    .block_len = avx2::block_len,
    .block_slot = avx2::block_slot,
    .gemv_tokens = avx2::Kit::tokens,
    .gemv = avx2::Leaves::gemv,
    .decode_row = avx2::Leaves::decode_row,
    .int8_slot = avx2_int8::slot,
    .round_int8_block = avx2_int8::round_block,
    .int8_six_bit_layout = Int8Layout::planes,
    .int8_six_bit_magnitudes = true,
    .gemv_int8 = avx2_int8::gemv,
    .int8_pass_tokens = avx2_int8::tokens_per_pass,
    .gemv_int8_tokens = avx2_int8::gemv_tokens,
    .gemm_int8 = avx2_int8::gemm,
};

}  // namespace anelm::kernels
