// AVX2 integer dot products for quantized matrices (int8_dot_applies).
// Without VNNI, vpmaddubsw multiplies unsigned by signed bytes into 16-bit
// pair sums: the weights' magnitudes |c| <= 127 against x carrying the
// weights' signs (vpsignb), so a pair sum (at most 2 * 127 * 127) cannot
// saturate. Weights come from vpshufb look-ups: 4-bit codes index 16 entries,
// 6-bit codes four 16-entry sub-tables (each XOR-ed with the one before, so
// that XOR-ing the four look-ups leaves the entry of the code).
#include "exec/cpu/kernels/x86/int8_dot_avx2.h"

#include "exec/cpu/kernels/int8_rows.h"
#include "exec/cpu/kernels/x86/avx2.h"

namespace anelm::kernels::avx2_int8 {

namespace {

using Codes = Int8Codes;

// A row's int8 entries in both lanes: one sub-table for 4-bit codes, four
// (pre-XOR-ed) for 6-bit codes.
struct Table {
    __m256i sub[4];
};

template <Codes C>
inline void load_table(const int8_t* entries, Table& t) {
    constexpr int n_sub = C == Codes::six_bits ? 4 : C == Codes::nibbles ? 1 : 0;
    for (int s = 0; s < n_sub; ++s) {
        t.sub[s] = _mm256_broadcastsi128_si256(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(entries + 16 * s)));
    }
    for (int s = n_sub - 1; s > 0; --s) t.sub[s] = _mm256_xor_si256(t.sub[s], t.sub[s - 1]);
}

// The int8 entries of 32 codes, one per byte.
template <Codes C>
inline __m256i lookup(__m256i codes, const Table& t) {
    __m256i v = _mm256_shuffle_epi8(t.sub[0], codes);
    if constexpr (C == Codes::six_bits) {
        for (int s = 1; s < 4; ++s) {
            // Codes below 16s go negative: vpshufb gives 0 for them.
            const __m256i shifted =
                _mm256_sub_epi8(codes, _mm256_set1_epi8(static_cast<char>(16 * s)));
            v = _mm256_xor_si256(v, _mm256_shuffle_epi8(t.sub[s], shifted));
        }
    }
    return v;
}

// 32 six-bit codes (24 bytes at p) as one byte each, the codes of each pair
// swapped: byte k of a dword holds code k ^ 1 of its three bytes. Each dword
// is first bytes 0, 1, 1, 2 of its group; a 16-bit multiply then moves each
// code into place, high (mulhi) for codes 1 and 3, low (mullo) for 0 and 2.
inline __m256i six_bit_codes_swapped(const uint8_t* p) {
    // Lane 0 takes bytes 0-11, lane 1 bytes 12-23 (loaded from p + 8).
    const __m256i v = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(p + 8),
                                          reinterpret_cast<const __m128i*>(p));
    const __m256i d = _mm256_shuffle_epi8(
        v, _mm256_setr_epi8(0, 1, 1, 2, 3, 4, 4, 5, 6, 7, 7, 8, 9, 10, 10, 11,  //
                            4, 5, 5, 6, 7, 8, 8, 9, 10, 11, 11, 12, 13, 14, 14, 15));
    // Word 0 is bits 0-15 of the group: code 1 (bits 6-11) >> 6 to byte 0,
    // code 0 << 8 to byte 1. Word 1 is bits 8-23: code 3 (bits 10-15 of the
    // word) >> 10 to byte 2, code 2 (bits 4-9) << 4 to byte 3.
    const __m256i odd = _mm256_mulhi_epu16(_mm256_and_si256(d, _mm256_set1_epi32(0xfc000fc0)),
                                           _mm256_set1_epi32(0x00400400));
    const __m256i even = _mm256_mullo_epi16(_mm256_and_si256(d, _mm256_set1_epi32(0x03f0003f)),
                                            _mm256_set1_epi32(0x00100100));
    return _mm256_or_si256(odd, even);
}

// The four runs of 32 int8 weights of one block of a row, in slot() order.
template <Codes C>
inline void block_weights(const uint8_t* p, const Table& t, __m256i w[4]) {
    if constexpr (C == Codes::nibbles) {
        const __m256i low4 = _mm256_set1_epi8(0x0f);
        for (int h = 0; h < 2; ++h) {
            const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * h));
            w[2 * h] = lookup<C>(_mm256_and_si256(v, low4), t);
            w[2 * h + 1] = lookup<C>(_mm256_and_si256(_mm256_srli_epi16(v, 4), low4), t);
        }
    } else if constexpr (C == Codes::six_bits) {
        for (int k = 0; k < 4; ++k) w[k] = lookup<C>(six_bit_codes_swapped(p + 24 * k), t);
    } else {
        for (int k = 0; k < 4; ++k)
            w[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * k));
    }
}

// Eight sums of four products w x, magnitude = |w|.
inline __m256i dot32(__m256i w, __m256i magnitude, __m256i x) {
    const __m256i pairs = _mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(x, w));
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

// sums[t] = sum_b d_b * (block b of the row . q) for the T tokens of x, each
// block decoded once for all of them; the blocks read in order with no
// software prefetch, as the AVX-512 leaf does (bench/README.md, "Decode: one
// row at a time").
template <Codes C, int T>
void row_dot(const uint8_t* row, const Table& table, const Int8Rows& x, float* sums) {
    constexpr int64_t bb = int8_block_bytes<C>;
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    const int64_t n_in = x.n_in, n_blocks = n_in / int8_block;
    for (int64_t b = 0; b < n_blocks; ++b) {
        __m256i w[4], magnitude[4];
        block_weights<C>(row + b * bb, table, w);
        for (int k = 0; k < 4; ++k) magnitude[k] = _mm256_abs_epi8(w[k]);
        for (int t = 0; t < T; ++t) {
            __m256i xq[4];
            for (int k = 0; k < 4; ++k) {
                xq[k] = _mm256_loadu_si256(
                    reinterpret_cast<const __m256i*>(x.q + t * n_in + b * int8_block + 32 * k));
            }
            const __m256i dot =
                _mm256_add_epi32(_mm256_add_epi32(dot32(w[0], magnitude[0], xq[0]),
                                                  dot32(w[1], magnitude[1], xq[1])),
                                 _mm256_add_epi32(dot32(w[2], magnitude[2], xq[2]),
                                                  dot32(w[3], magnitude[3], xq[3])));
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot),
                                     _mm256_set1_ps(x.scale[t * n_blocks + b]), acc[t]);
        }
    }
    for (int t = 0; t < T; ++t) sums[t] = avx2::hsum(acc[t]);
}

// The matrix-vector leaf int8_gemv_rows drives.
template <Codes C>
struct GemvLeaf {
    using Table = avx2_int8::Table;
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

}  // namespace

int64_t slot(int nbits, int64_t e) {
    if (nbits == 6) return e ^ 1;
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

}  // namespace anelm::kernels::avx2_int8
