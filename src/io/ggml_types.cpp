// ggml's block layouts read byte by byte (little-endian, any alignment), with
// the arithmetic of ggml's dequantize_row_*. Every product here is exact in
// f32 (an f16's 11 significant bits times a code and scale of at most 12
// together; Q8_K's f32 times one int8 rounds once), so each value is the one
// rounding of its exact formula: neither the order of the products nor a
// fused multiply-add can change a bit, and the results equal ggml's on any
// compiler.
#include "io/ggml_types.h"

#include <array>
#include <bit>

#include "base/error.h"
#include "base/half.h"

namespace anelm {
namespace {

uint16_t u16_at(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] | p[1] << 8);
}

uint32_t u32_at(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
           static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

float half_at(const uint8_t* p) {
    return f16_to_f32(u16_at(p));
}

float i8_at(const uint8_t* p) {
    return static_cast<float>(static_cast<int8_t>(*p));
}

// The 32-element blocks keep element j in the low nibble of byte j and
// element j + 16 in its high nibble.

// Q4_0: f16 d, 16 bytes of nibbles; x = (q - 8) * d.
void q4_0_block(const uint8_t* b, float* y) {
    const float d = half_at(b);
    const uint8_t* qs = b + 2;
    for (int j = 0; j < 16; ++j) {
        y[j] = static_cast<float>((qs[j] & 0xF) - 8) * d;
        y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
    }
}

// Q4_1: f16 d, f16 m, 16 bytes of nibbles; x = q * d + m.
void q4_1_block(const uint8_t* b, float* y) {
    const float d = half_at(b);
    const float m = half_at(b + 2);
    const uint8_t* qs = b + 4;
    for (int j = 0; j < 16; ++j) {
        y[j] = static_cast<float>(qs[j] & 0xF) * d + m;
        y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
    }
}

// Q5_0/Q5_1's fifth bit of element j is bit j of a little-endian u32.
int q5_code(const uint8_t* qs, uint32_t qh, int j) {
    const int nibble = j < 16 ? qs[j] & 0xF : qs[j - 16] >> 4;
    return nibble | static_cast<int>((qh >> j) & 1u) << 4;
}

// Q5_0: f16 d, u32 high bits, 16 bytes of nibbles; x = (q - 16) * d.
void q5_0_block(const uint8_t* b, float* y) {
    const float d = half_at(b);
    const uint32_t qh = u32_at(b + 2);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q5_code(b + 6, qh, j) - 16) * d;
}

// Q5_1: f16 d, f16 m, u32 high bits, 16 bytes of nibbles; x = q * d + m.
void q5_1_block(const uint8_t* b, float* y) {
    const float d = half_at(b);
    const float m = half_at(b + 2);
    const uint32_t qh = u32_at(b + 4);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q5_code(b + 8, qh, j)) * d + m;
}

// Q8_0: f16 d, 32 int8; x = q * d.
void q8_0_block(const uint8_t* b, float* y) {
    const float d = half_at(b);
    for (int j = 0; j < 32; ++j) y[j] = i8_at(b + 2 + j) * d;
}

// IQ4_NL: f16 d, 16 bytes of nibbles indexing a fixed non-linear table.
constexpr std::array<int8_t, 16> iq4_nl_values = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                  1,    13,   25,  38,  53,  69,  89,  113};

void iq4_nl_block(const uint8_t* b, float* y) {
    const float d = half_at(b);
    const uint8_t* qs = b + 2;
    for (int j = 0; j < 16; ++j) {
        y[j] = d * static_cast<float>(iq4_nl_values[qs[j] & 0xF]);
        y[j + 16] = d * static_cast<float>(iq4_nl_values[qs[j] >> 4]);
    }
}

// The K-quants' 256 elements come in two halves of 128. Q2_K and Q3_K keep
// a half's 2-bit codes in 32 bytes: element 32*s + i (i < 32) is bits 2s..2s+1
// of byte i, and each 16 elements have their own scale.

// Q2_K: 16 scale bytes (low nibble scale, high nibble min), 64 bytes of codes,
// f16 d, f16 dmin; x = (d * scale) * q - (dmin * min).
void q2_k_block(const uint8_t* b, float* y) {
    const uint8_t* scales = b;
    const float d = half_at(b + 80);
    const float dmin = half_at(b + 82);
    for (int half = 0; half < 2; ++half) {
        const uint8_t* q = b + 16 + 32 * half;
        for (int group = 0; group < 8; ++group) {
            const uint8_t sc = scales[8 * half + group];
            const float dl = d * static_cast<float>(sc & 0xF);
            const float ml = dmin * static_cast<float>(sc >> 4);
            const int shift = 2 * (group / 2), first = 16 * (group % 2);
            for (int l = 0; l < 16; ++l)
                *y++ = dl * static_cast<float>((q[first + l] >> shift) & 3) - ml;
        }
    }
}

// Q3_K's sixteen 6-bit scales, biased by 32, in 12 bytes: the low 4 bits of
// scale i are the low nibble of byte i (i < 8) or the high nibble of byte
// i - 8; its top 2 bits are bits 2*(i/4)..+1 of byte 8 + i%4.
int q3_k_scale(const uint8_t* s, int i) {
    const int low = i < 8 ? s[i] & 0xF : s[i - 8] >> 4;
    const int high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
    return (low | high << 4) - 32;
}

// Q3_K: 32 bytes of high bits, 64 bytes of 2-bit codes, 12 bytes of scales,
// f16 d. Element 32*s + i of half h has its high bit in bit 4h + s of byte i
// of the mask; a set bit means q = low bits, a clear one q = low bits - 4.
void q3_k_block(const uint8_t* b, float* y) {
    const uint8_t* hmask = b;
    const uint8_t* scales = b + 96;
    const float d = half_at(b + 108);
    for (int half = 0; half < 2; ++half) {
        const uint8_t* q = b + 32 + 32 * half;
        for (int group = 0; group < 8; ++group) {
            const float dl = d * static_cast<float>(q3_k_scale(scales, 8 * half + group));
            const int shift = 2 * (group / 2), first = 16 * (group % 2);
            const uint8_t bit = static_cast<uint8_t>(1u << (4 * half + group / 2));
            for (int l = 0; l < 16; ++l) {
                const int low = (q[first + l] >> shift) & 3;
                const int code = low - ((hmask[first + l] & bit) ? 0 : 4);
                *y++ = dl * static_cast<float>(code);
            }
        }
    }
}

// Q4_K/Q5_K's eight 6-bit scales and mins in 12 bytes: sub-blocks 0-3 keep
// them in the low 6 bits of bytes 0-3 (scale) and 4-7 (min); sub-blocks 4-7
// take their low 4 bits from byte j + 4 (scale low nibble, min high nibble)
// and their top 2 bits from the spare top bits of byte j - 4 (scale) and j (min).
void k4_scale_min(const uint8_t* s, int j, int& scale, int& min) {
    if (j < 4) {
        scale = s[j] & 63;
        min = s[j + 4] & 63;
    } else {
        scale = (s[j + 4] & 0xF) | (s[j - 4] >> 6) << 4;
        min = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

// Q4_K: f16 d, f16 dmin, 12 bytes of scales, 128 bytes of nibbles. Each 64
// elements read 32 bytes: low nibbles are sub-block 2k, high nibbles 2k + 1;
// x = (d * scale) * q - (dmin * min).
void q4_k_block(const uint8_t* b, float* y) {
    const float d = half_at(b);
    const float dmin = half_at(b + 2);
    const uint8_t* scales = b + 4;
    for (int sub = 0; sub < 8; ++sub) {
        int scale = 0, min = 0;
        k4_scale_min(scales, sub, scale, min);
        const float dl = d * static_cast<float>(scale);
        const float ml = dmin * static_cast<float>(min);
        const uint8_t* q = b + 16 + 32 * (sub / 2);
        const int shift = 4 * (sub % 2);
        for (int l = 0; l < 32; ++l) *y++ = dl * static_cast<float>((q[l] >> shift) & 0xF) - ml;
    }
}

// Q5_K: as Q4_K with 32 bytes of fifth bits before the nibbles: element l of
// sub-block s has its fifth bit in bit s of byte l.
void q5_k_block(const uint8_t* b, float* y) {
    const float d = half_at(b);
    const float dmin = half_at(b + 2);
    const uint8_t* scales = b + 4;
    const uint8_t* qh = b + 16;
    for (int sub = 0; sub < 8; ++sub) {
        int scale = 0, min = 0;
        k4_scale_min(scales, sub, scale, min);
        const float dl = d * static_cast<float>(scale);
        const float ml = dmin * static_cast<float>(min);
        const uint8_t* q = b + 48 + 32 * (sub / 2);
        const int shift = 4 * (sub % 2);
        for (int l = 0; l < 32; ++l) {
            const int code = ((q[l] >> shift) & 0xF) | ((qh[l] >> sub) & 1) << 4;
            *y++ = dl * static_cast<float>(code) - ml;
        }
    }
}

// Q6_K: 128 bytes of low nibbles, 64 bytes of 2-bit highs, 16 int8 scales,
// f16 d. In half h, element 32*s + l (s < 4, l < 32) takes its low 4 bits
// from byte 64h + 32*(s%2) + l (low nibble for s < 2, high for s >= 2) and
// its top 2 from bits 2s..2s+1 of byte 128 + 32h + l; one scale per 16
// elements; x = (d * scale) * (q - 32).
void q6_k_block(const uint8_t* b, float* y) {
    const float d = half_at(b + 208);
    for (int half = 0; half < 2; ++half) {
        const uint8_t* ql = b + 64 * half;
        const uint8_t* qh = b + 128 + 32 * half;
        const uint8_t* sc = b + 192 + 8 * half;
        for (int s = 0; s < 4; ++s) {
            const uint8_t* low = ql + 32 * (s % 2);
            const int nibble_shift = 4 * (s / 2);
            for (int l = 0; l < 32; ++l) {
                const int code = ((low[l] >> nibble_shift) & 0xF) | ((qh[l] >> (2 * s)) & 3) << 4;
                y[32 * s + l] = d * i8_at(sc + 2 * s + l / 16) * static_cast<float>(code - 32);
            }
        }
        y += 128;
    }
}

// Q8_K: f32 d, 256 int8, then 16 int16 sums that dequantization ignores.
void q8_k_block(const uint8_t* b, float* y) {
    const float d = std::bit_cast<float>(u32_at(b));
    for (int j = 0; j < 256; ++j) y[j] = d * i8_at(b + 4 + j);
}

// The plain types: a block is one element.
void f32_elem(const uint8_t* b, float* y) {
    *y = std::bit_cast<float>(u32_at(b));
}

void f16_elem(const uint8_t* b, float* y) {
    *y = half_at(b);
}

void bf16_elem(const uint8_t* b, float* y) {
    *y = bf16_to_f32(u16_at(b));
}

// Dequantizes `blocks` blocks; the block function is a template argument so
// that it inlines into the loop (F16 rows call it once per element).
using RowFn = void (*)(const uint8_t* src, float* dst, int64_t blocks, int64_t block_bytes,
                       int64_t block_elems);

template <void (*block)(const uint8_t*, float*)>
void each_block(const uint8_t* src, float* dst, int64_t blocks, int64_t block_bytes,
                int64_t block_elems) {
    for (int64_t i = 0; i < blocks; ++i) block(src + i * block_bytes, dst + i * block_elems);
}

struct Entry {
    uint32_t id;
    std::string_view name;
    int64_t block_elems, block_bytes;
    RowFn dequantize;  // null where anelm has none
};

// Every id ggml defines at d32676d: names as gguf-py spells them, sizes as
// ggml's type traits give them.
constexpr std::array<Entry, 35> type_table = {{
    {0, "F32", 1, 4, each_block<f32_elem>},
    {1, "F16", 1, 2, each_block<f16_elem>},
    {2, "Q4_0", 32, 18, each_block<q4_0_block>},
    {3, "Q4_1", 32, 20, each_block<q4_1_block>},
    {6, "Q5_0", 32, 22, each_block<q5_0_block>},
    {7, "Q5_1", 32, 24, each_block<q5_1_block>},
    {8, "Q8_0", 32, 34, each_block<q8_0_block>},
    {9, "Q8_1", 32, 36, nullptr},
    {10, "Q2_K", 256, 84, each_block<q2_k_block>},
    {11, "Q3_K", 256, 110, each_block<q3_k_block>},
    {12, "Q4_K", 256, 144, each_block<q4_k_block>},
    {13, "Q5_K", 256, 176, each_block<q5_k_block>},
    {14, "Q6_K", 256, 210, each_block<q6_k_block>},
    {15, "Q8_K", 256, 292, each_block<q8_k_block>},
    {16, "IQ2_XXS", 256, 66, nullptr},
    {17, "IQ2_XS", 256, 74, nullptr},
    {18, "IQ3_XXS", 256, 98, nullptr},
    {19, "IQ1_S", 256, 50, nullptr},
    {20, "IQ4_NL", 32, 18, each_block<iq4_nl_block>},
    {21, "IQ3_S", 256, 110, nullptr},
    {22, "IQ2_S", 256, 82, nullptr},
    {23, "IQ4_XS", 256, 136, nullptr},
    {24, "I8", 1, 1, nullptr},
    {25, "I16", 1, 2, nullptr},
    {26, "I32", 1, 4, nullptr},
    {27, "I64", 1, 8, nullptr},
    {28, "F64", 1, 8, nullptr},
    {29, "IQ1_M", 256, 56, nullptr},
    {30, "BF16", 1, 2, each_block<bf16_elem>},
    {34, "TQ1_0", 256, 54, nullptr},
    {35, "TQ2_0", 256, 66, nullptr},
    {39, "MXFP4", 32, 17, nullptr},
    {40, "NVFP4", 64, 36, nullptr},
    {41, "Q1_0", 128, 18, nullptr},
    {42, "Q2_0", 64, 18, nullptr},
}};

const Entry* find_entry(uint32_t type) {
    for (const Entry& e : type_table)
        if (e.id == type) return &e;
    return nullptr;
}

// The entry of a type the caller names by enum, which a cast can make unknown.
const Entry& known_entry(GgmlType type) {
    const Entry* e = find_entry(static_cast<uint32_t>(type));
    if (e == nullptr) fail("ggml type {} is unknown", static_cast<uint32_t>(type));
    return *e;
}

}  // namespace

std::optional<GgmlTypeInfo> ggml_type_info(uint32_t type) {
    const Entry* e = find_entry(type);
    if (e == nullptr) return std::nullopt;
    return GgmlTypeInfo{e->name, e->block_elems, e->block_bytes, e->dequantize != nullptr};
}

std::string ggml_type_name(uint32_t type) {
    if (const auto info = ggml_type_info(type)) return std::string(info->name);
    return fmt::format("type {}", type);
}

uint64_t ggml_row_bytes(GgmlType type, int64_t n) {
    const Entry& e = known_entry(type);
    if (n < 0 || n % e.block_elems != 0)
        fail("{}: a row of {} elements is not a whole number of {}-element blocks", e.name, n,
             e.block_elems);
    return static_cast<uint64_t>(n / e.block_elems) * static_cast<uint64_t>(e.block_bytes);
}

void dequantize_row(GgmlType type, const std::byte* src, float* dst, int64_t n) {
    const Entry& e = known_entry(type);
    if (e.dequantize == nullptr)
        fail("{}: tensors of this ggml type cannot be dequantized", e.name);
    const int64_t blocks = static_cast<int64_t>(ggml_row_bytes(type, n)) / e.block_bytes;
    e.dequantize(reinterpret_cast<const uint8_t*>(src), dst, blocks, e.block_bytes, e.block_elems);
}

}  // namespace anelm
