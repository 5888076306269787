// AVX-512 (F, BW, VL, DQ, VBMI, VNNI) + FMA + F16C leaves for quantized matrices
// (the integer dot products are in int8_dot_avx512.cpp).
// Up to 4 bits, a row's table lives in a register as 16 f32 (narrower tables
// repeated to 16 entries, so that vpermps, which reads only the low 4 bits of
// each index, ignores the bits of the codes above); codes are loaded so that
// each dword holds 8 consecutive codes, and shifting the dwords right one code
// at a time yields 16 indices per step without masking or unpacking. At 6
// bits the table is two 64-byte planes, the low and the high bytes of its f16
// entries, and one vpermb per plane looks up 64 codes at once (six_bit_values).
// 8-bit tables are gathered; int8 rows convert directly. Integer rows are
// summed on the codes and scaled once at the end.

// GCC 12 flags its own _mm512_undefined_* inside AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>

#include "kernels/gemv_prefetch.h"
#include "kernels/quant_isa.h"
#include "kernels/vec_quant.h"
#include "kernels/x86/int8_dot_avx2.h"
#include "kernels/x86_512/int8_dot_avx512.h"

namespace anelm::kernels::avx512_quant {

namespace {

// Codes per dword in block order; 6- and 8-bit codes keep their natural order.
constexpr int codes_per_dword(int nbits) {
    return nbits == 6 || nbits == 8 ? 1 : 8;
}

// A row's table: `values` for the scalar tail and gathers, f32 zmm for the
// look-ups up to 4 bits and at the tail of 6-bit rows, byte planes for 6 bits.
struct RowTable {
    alignas(64) float values[256];
    __m512 t16;
    __m512 t64[4];
    __m512i low_bytes, high_bytes;
};

// vpermt2b patterns gathering the low (even) and the high (odd) bytes of 64
// f16 entries held in two zmm.
struct BytePlanes {
    alignas(64) uint8_t low[64]{};
    alignas(64) uint8_t high[64]{};
    constexpr BytePlanes() {
        for (int k = 0; k < 64; ++k) {
            low[k] = static_cast<uint8_t>(2 * k);
            high[k] = static_cast<uint8_t>(2 * k + 1);
        }
    }
};
constexpr BytePlanes byte_planes{};

void load_table(const uint16_t* f16, int nbits, RowTable& t) {
    const int n = 1 << nbits;
    if (n >= 16) {
        for (int k = 0; k < n; k += 16) {
            _mm512_store_ps(
                t.values + k,
                _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(f16 + k))));
        }
    } else {
        for (int k = 0; k < n; ++k) t.values[k] = _cvtsh_ss(f16[k]);
        for (int k = n; k < 16; ++k) t.values[k] = t.values[k & (n - 1)];
    }
    t.t16 = _mm512_load_ps(t.values);
    if (nbits == 6) {
        for (int s = 0; s < 4; ++s) t.t64[s] = _mm512_load_ps(t.values + 16 * s);
        const __m512i first = _mm512_loadu_si512(f16), second = _mm512_loadu_si512(f16 + 32);
        t.low_bytes = _mm512_permutex2var_epi8(first, _mm512_load_si512(byte_planes.low), second);
        t.high_bytes = _mm512_permutex2var_epi8(first, _mm512_load_si512(byte_planes.high), second);
    }
}

// The table entries of 16 indices whose low NBITS bits are the codes (higher
// bits are ignored, except at 8 bits where the indices must be exact).
template <int NBITS>
inline __m512 lookup(__m512i idx, const RowTable& t) {
    if constexpr (NBITS <= 4) {
        return _mm512_permutexvar_ps(idx, t.t16);
    } else if constexpr (NBITS == 6) {
        const __m512 lo = _mm512_permutex2var_ps(t.t64[0], idx, t.t64[1]);
        const __m512 hi = _mm512_permutex2var_ps(t.t64[2], idx, t.t64[3]);
        return _mm512_mask_blend_ps(_mm512_test_epi32_mask(idx, _mm512_set1_epi32(32)), lo, hi);
    } else {
        return _mm512_i32gather_ps(idx, t.values, 4);
    }
}

// One block of 16 * codes_per_dword(NBITS) codes (2 * NBITS * codes_per_dword
// bytes at p) as 16 dwords, dword d holding the codes of bytes [b d, b (d + 1))
// for b bytes per dword, so its lowest code is element codes_per_dword * d.
template <int NBITS>
inline __m512i block_dwords(const uint8_t* p) {
    if constexpr (NBITS == 4) {
        return _mm512_loadu_si512(p);
    } else if constexpr (NBITS == 2) {
        return _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    } else if constexpr (NBITS == 1) {
        return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    } else {
        // 48 bytes, three per dword: lane k takes bytes 12k..12k+11.
        const __m512i v = _mm512_maskz_loadu_epi8(0xffffffffffffull, p);
        const __m512i lanes = _mm512_permutexvar_epi32(
            _mm512_setr_epi32(0, 1, 2, 2, 3, 4, 5, 5, 6, 7, 8, 8, 9, 10, 11, 11), v);
        const __m512i spread = _mm512_broadcast_i32x4(
            _mm_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1));
        return _mm512_shuffle_epi8(lanes, spread);
    }
}

// Byte b of a spread block of 48 code bytes: qword slot q = b / 8 holds the six
// bytes of 8-code group 4 (q % 2) + q / 2, so that unpacking 128-bit lanes
// (which pair qword slots 2L and 2L + 1) later yields the codes in order.
struct SixBitSpread {
    alignas(64) uint8_t bytes[64]{};
    constexpr SixBitSpread() {
        for (int b = 0; b < 64; ++b) {
            const int q = b / 8, group = 4 * (q % 2) + q / 2;
            bytes[b] = static_cast<uint8_t>(6 * group + std::min(b % 8, 5));
        }
    }
};
constexpr SixBitSpread six_bit_spread{};

// The values of 64 consecutive 6-bit codes (48 bytes at p), in natural order
// in w[0..4). vpmultishiftqb cuts each qword's 48 bits of codes into 8 bytes
// with a code in the low 6 bits, which is all vpermb reads of an index.
inline void six_bit_values(const uint8_t* p, const RowTable& t, __m512 w[4]) {
    const __m512i bytes = _mm512_maskz_loadu_epi8(0xffffffffffffull, p);
    const __m512i spread = _mm512_permutexvar_epi8(_mm512_load_si512(six_bit_spread.bytes), bytes);
    const __m512i codes =
        _mm512_multishift_epi64_epi8(_mm512_set1_epi64(0x2a241e18120c0600ll), spread);
    const __m512i low = _mm512_permutexvar_epi8(codes, t.low_bytes);
    const __m512i high = _mm512_permutexvar_epi8(codes, t.high_bytes);
    const __m512i first = _mm512_unpacklo_epi8(low, high);   // codes 0..31
    const __m512i second = _mm512_unpackhi_epi8(low, high);  // codes 32..63
    w[0] = _mm512_cvtph_ps(_mm512_castsi512_si256(first));
    w[1] = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(first, 1));
    w[2] = _mm512_cvtph_ps(_mm512_castsi512_si256(second));
    w[3] = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(second, 1));
}

// Where lane k of 16 natural-order codes finds its code: the two bytes from
// byte k * NBITS / 8 (as a pshufb pattern within a repeated 16-byte load) and
// the shift of the code within them.
template <int NBITS>
struct NaturalSpread {
    alignas(64) int8_t bytes[64]{};
    alignas(64) int32_t shifts[16]{};
    constexpr NaturalSpread() {
        for (int k = 0; k < 16; ++k) {
            const int byte = k * NBITS / 8;
            bytes[4 * k] = static_cast<int8_t>(byte);
            bytes[4 * k + 1] = static_cast<int8_t>(byte + 1 < 16 ? byte + 1 : -1);
            bytes[4 * k + 2] = bytes[4 * k + 3] = -1;
            shifts[k] = k * NBITS % 8;
        }
    }
};
template <int NBITS>
constexpr NaturalSpread<NBITS> natural_spread{};

// The 16 values of codes i..i+15 of a row (i a multiple of 16), in natural
// order; codes at or past n_in read as 0, and no byte past the row is read.
template <int NBITS, bool INT8>
inline __m512 values16(const uint8_t* row, int64_t row_bytes, int64_t i, const RowTable& t) {
    const int64_t byte = i / 8 * NBITS;
    const auto n_bytes = static_cast<unsigned>(std::min<int64_t>(2 * NBITS, row_bytes - byte));
    const __m128i bytes =
        _mm_maskz_loadu_epi8(static_cast<__mmask16>((1u << n_bytes) - 1), row + byte);
    if constexpr (INT8) {
        return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes));
    } else if constexpr (NBITS == 8) {
        return lookup<8>(_mm512_cvtepu8_epi32(bytes), t);
    } else {
        const NaturalSpread<NBITS>& s = natural_spread<NBITS>;
        const __m512i pairs =
            _mm512_shuffle_epi8(_mm512_broadcast_i32x4(bytes), _mm512_load_si512(s.bytes));
        const __m512i codes =
            _mm512_and_si512(_mm512_srlv_epi32(pairs, _mm512_load_si512(s.shifts)),
                             _mm512_set1_epi32((1 << NBITS) - 1));
        return lookup<NBITS>(codes, t);
    }
}

// Codes are streamed once: ask for them this far ahead of use.
constexpr int64_t prefetch_bytes = 2048;

inline void prefetch(const uint8_t* p) {
    _mm_prefetch(reinterpret_cast<const char*>(p + prefetch_bytes), _MM_HINT_T0);
}

constexpr int quant_tokens = 8;

// Accumulators per token: enough independent FMA chains without spilling.
template <int T>
constexpr int n_acc = T == 1   ? 4
                      : T <= 4 ? 2
                               : 1;

// sums[t] = sum_i xb[t * n_in + i] * value(code i) over one row.
template <int NBITS, bool INT8, int T>
void row_dot(const uint8_t* row, int64_t n_in, const RowTable& tab, const float* xb, float* sums) {
    constexpr int A = n_acc<T>;
    __m512 acc[T][A];
    for (int t = 0; t < T; ++t) {
        for (int a = 0; a < A; ++a) acc[t][a] = _mm512_setzero_ps();
    }
    const auto fma = [&](int t, int a, __m512 w, const float* x) {
        acc[t][a] = _mm512_fmadd_ps(w, _mm512_loadu_ps(x + t * n_in), acc[t][a]);
    };
    const int64_t row_bytes = (n_in * NBITS + 7) / 8;
    int64_t i = 0;
    if constexpr (NBITS == 6) {
        for (; i + 64 <= n_in; i += 64) {
            prefetch(row + i / 8 * 6);
            __m512 w[4];
            six_bit_values(row + i / 8 * 6, tab, w);
            for (int q = 0; q < 4; ++q) {
                for (int t = 0; t < T; ++t) fma(t, q % A, w[q], xb + i + 16 * q);
            }
        }
    } else if constexpr (codes_per_dword(NBITS) > 1) {
        constexpr int per_dword = codes_per_dword(NBITS), len = 16 * per_dword;
        for (; i + len <= n_in; i += len) {
            prefetch(row + i / 8 * NBITS);
            const __m512i d = block_dwords<NBITS>(row + i / 8 * NBITS);
            for (int p = 0; p < per_dword; ++p) {
                const __m512 w = lookup<NBITS>(_mm512_srli_epi32(d, p * NBITS), tab);
                for (int t = 0; t < T; ++t) fma(t, p % A, w, xb + i + 16 * p);
            }
        }
    } else {
        for (; i + 64 <= n_in; i += 64) {
            prefetch(row + i);
            for (int j = 0; j < 4; ++j) {
                const __m128i bytes =
                    _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i + 16 * j));
                const __m512 w = INT8 ? _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes))
                                      : lookup<NBITS>(_mm512_cvtepu8_epi32(bytes), tab);
                for (int t = 0; t < T; ++t) fma(t, j % A, w, xb + i + 16 * j);
            }
        }
    }
    // Natural order from here; the last step is masked.
    for (; i < n_in; i += 16) {
        const auto keep = static_cast<__mmask16>(
            n_in - i >= 16 ? 0xffff : (1u << static_cast<unsigned>(n_in - i)) - 1);
        const __m512 w = values16<NBITS, INT8>(row, row_bytes, i, tab);
        for (int t = 0; t < T; ++t) {
            const __m512 x = _mm512_maskz_loadu_ps(keep, xb + t * n_in + i);
            acc[t][0] = _mm512_mask3_fmadd_ps(w, x, acc[t][0], keep);
        }
    }
    for (int t = 0; t < T; ++t) {
        __m512 s = acc[t][0];
        for (int a = 1; a < A; ++a) s = _mm512_add_ps(s, acc[t][a]);
        sums[t] = _mm512_reduce_add_ps(s);
    }
}

// One token against R consecutive rows of int8 codes or codes of at most 4
// bits (each row with its own table): every block of x is loaded once for all
// R rows. Codes cost a quarter or an eighth of x's bytes, so sharing x is what
// keeps decode of long rows (x past L1) from being bound by re-reading it.
template <int NBITS, bool INT8, int R>
void rows_dot(const uint8_t* rows, int64_t row_bytes, int64_t n_in, const RowTable* tabs,
              const float* xb, float* sums) {
    static_assert(INT8 || codes_per_dword(NBITS) == 8);
    constexpr int steps = INT8 ? 4 : 8;  // 16-code steps per block of codes
    constexpr int A = 2, len = 16 * steps;
    __m512 acc[R][A];
    for (int r = 0; r < R; ++r) {
        for (int a = 0; a < A; ++a) acc[r][a] = _mm512_setzero_ps();
    }
    // Short runs prefetch the next run; long rows, prefetch_bytes ahead.
    const int64_t ahead = R * row_bytes <= 8192 ? row_bytes : prefetch_bytes;
    int64_t i = 0;
    for (; i + len <= n_in; i += len) {
        const int64_t at = i / 8 * NBITS;
        const uint8_t* pf = gemv_prefetch_at(rows, R, row_bytes, at, ahead);
        __m512i d[R];
        for (int r = 0; r < R; ++r) {
            _mm_prefetch(reinterpret_cast<const char*>(pf + r * row_bytes), _MM_HINT_T0);
            if constexpr (!INT8) d[r] = block_dwords<NBITS>(rows + r * row_bytes + at);
        }
        for (int p = 0; p < steps; ++p) {
            const __m512 x = _mm512_loadu_ps(xb + i + 16 * p);
            for (int r = 0; r < R; ++r) {
                __m512 w;
                if constexpr (INT8) {
                    const auto* codes =
                        reinterpret_cast<const __m128i*>(rows + r * row_bytes + at + 16 * p);
                    w = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(codes)));
                } else {
                    w = lookup<NBITS>(_mm512_srli_epi32(d[r], p * NBITS), tabs[r]);
                }
                acc[r][p % A] = _mm512_fmadd_ps(w, x, acc[r][p % A]);
            }
        }
    }
    for (int r = 0; r < R; ++r) {
        const uint8_t* row = rows + r * row_bytes;
        for (int64_t k = i; k < n_in; k += 16) {
            const auto keep = static_cast<__mmask16>(
                n_in - k >= 16 ? 0xffff : (1u << static_cast<unsigned>(n_in - k)) - 1);
            const __m512 w = values16<NBITS, INT8>(row, row_bytes, k, tabs[r]);
            const __m512 x = _mm512_maskz_loadu_ps(keep, xb + k);
            acc[r][0] = _mm512_mask3_fmadd_ps(w, x, acc[r][0], keep);
        }
        sums[r] = _mm512_reduce_add_ps(_mm512_add_ps(acc[r][0], acc[r][1]));
    }
}

// Rows a single token reads at once (rows_dot).
constexpr int shared_x_rows = 4;

// One token, rows [o0, o1) of an int8 matrix or one of codes of at most 4
// bits, in runs of shared_x_rows; returns the first row not done.
template <int NBITS, bool INT8>
int64_t gemv_row_runs(const QuantMatrix& w, const float* xb, int64_t o0, int64_t o1, float* y) {
    constexpr int R = shared_x_rows;
    RowTable tabs[R];
    const uint16_t* loaded[R] = {};
    float sums[R];
    int64_t o = o0;
    for (; o + R <= o1; o += R) {
        if constexpr (!INT8) {
            for (int r = 0; r < R; ++r) {
                const uint16_t* table = quant_row_table(w, o + r);
                if (table != loaded[r]) load_table(loaded[r] = table, NBITS, tabs[r]);
            }
        }
        rows_dot<NBITS, INT8, R>(w.codes + o * w.row_bytes(), w.row_bytes(), w.n_in, tabs, xb,
                                 sums);
        for (int r = 0; r < R; ++r) {
            y[o + r] = w.kind == QuantKind::lut ? sums[r] : sums[r] * _cvtsh_ss(w.scales[o + r]);
        }
    }
    return o;
}

template <int NBITS, bool INT8>
void decode(const uint8_t* row, int64_t row_bytes, int64_t k0, int64_t n, const RowTable& tab,
            float scale, float* out) {
    const __m512 vscale = _mm512_set1_ps(scale);
    const int64_t end = k0 + n;
    // Whole 16-code steps from the first multiple of 16 at or before k0, the
    // lanes outside [k0, end) masked off.
    for (int64_t i = k0 / 16 * 16; i < end; i += 16) {
        const int64_t lo = std::max(k0, i), hi = std::min(end, i + 16);
        const auto keep = static_cast<__mmask16>(((1u << (hi - i)) - 1) & ~((1u << (lo - i)) - 1));
        const __m512 v = _mm512_mul_ps(values16<NBITS, INT8>(row, row_bytes, i, tab), vscale);
        _mm512_mask_storeu_ps(out + (i - k0), keep, v);
    }
}

// Block order (quant_isa.h): element e of a block goes to the lane of its
// dword (e / c) in the run of its place in that dword (e % c), c codes per dword.
int64_t block_len(int nbits) {
    return codes_per_dword(nbits) == 1 ? 0 : 16 * codes_per_dword(nbits);
}

int64_t block_slot(int nbits, int64_t e) {
    const int64_t c = codes_per_dword(nbits);
    return e % c * 16 + e / c;
}

// What vec_quant.h's shared walk needs of this instruction set besides
// load_table, row_dot and decode.
struct Kit {
    using RowTable = avx512_quant::RowTable;
    static constexpr int tokens = quant_tokens;
    static float f16_scale(uint16_t h) { return _cvtsh_ss(h); }
    template <int NBITS, bool INT8>
    static int64_t row_runs(const QuantMatrix& w, const float* xb, int64_t o0, int64_t o1,
                            float* y) {
        if constexpr (INT8 || NBITS <= 4) return gemv_row_runs<NBITS, INT8>(w, xb, o0, o1, y);
        return o0;
    }
};

using Leaves = VecQuant<Kit>;

}  // namespace

}  // namespace anelm::kernels::avx512_quant

namespace anelm::kernels {

const QuantIsa avx512_quant_isa = {
    .name = "avx512",
    .block_len = avx512_quant::block_len,
    .block_slot = avx512_quant::block_slot,
    .gemv_tokens = avx512_quant::Kit::tokens,
    .gemv = avx512_quant::Leaves::gemv,
    .decode_row = avx512_quant::Leaves::decode_row,
    .int8_slot = avx512_int8::slot,
    .round_int8_block = avx2_int8::round_block_evens_of_128,
    .int8_six_bit_layout = Int8Layout::packed,
    .int8_six_bit_magnitudes = false,
    .gemv_int8 = avx512_int8::gemv,
    .int8_pass_tokens = avx512_int8::tokens_per_pass,
    .gemv_int8_tokens = avx512_int8::gemv_tokens,
    .gemm_int8 = avx512_int8::gemm,
};

}  // namespace anelm::kernels
