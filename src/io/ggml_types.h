// The tensor types of ggml as GGUF files store them: names, block sizes, and
// dequantization to f32 that gives the same bits as ggml's scalar C reference
// (ggml-quants.c of llama.cpp d32676d) for the types anelm reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace anelm {

// ggml's tensor type ids as GGUF stores them. Ids 4, 5, 31-33 and 36-38 were
// removed from ggml and are not valid in a file.
enum class GgmlType : uint32_t {
    f32 = 0,
    f16 = 1,
    q4_0 = 2,
    q4_1 = 3,
    q5_0 = 6,
    q5_1 = 7,
    q8_0 = 8,
    q8_1 = 9,
    q2_k = 10,
    q3_k = 11,
    q4_k = 12,
    q5_k = 13,
    q6_k = 14,
    q8_k = 15,
    iq2_xxs = 16,
    iq2_xs = 17,
    iq3_xxs = 18,
    iq1_s = 19,
    iq4_nl = 20,
    iq3_s = 21,
    iq2_s = 22,
    iq4_xs = 23,
    i8 = 24,
    i16 = 25,
    i32 = 26,
    i64 = 27,
    f64 = 28,
    iq1_m = 29,
    bf16 = 30,
    tq1_0 = 34,
    tq2_0 = 35,
    mxfp4 = 39,
    nvfp4 = 40,
    q1_0 = 41,
    q2_0 = 42,
};

struct GgmlTypeInfo {
    std::string_view name;  // gguf-py's name: "F32", "Q4_0", "Q4_K", "IQ4_NL", "BF16" ...
    int64_t block_elems;    // elements per block (1 for the plain types)
    int64_t block_bytes;    // bytes per block
    bool dequantizable;     // dequantize_row handles it
};

// Info for every type id ggml defines, the ones anelm cannot dequantize too (so
// an error can name them); nullopt for unknown or removed ids.
std::optional<GgmlTypeInfo> ggml_type_info(uint32_t type);

// The type's name, or "type N" for an id ggml does not define.
std::string ggml_type_name(uint32_t type);

// Bytes of a row of n elements; throws Error naming the type unless n is a
// non-negative multiple of block_elems.
uint64_t ggml_row_bytes(GgmlType type, int64_t n);

// dst[0..n) = the n elements whose blocks start at src, bit for bit as ggml's
// dequantize_row_* computes them (but for an F16 signaling NaN, which ggml
// quiets and f16_to_f32 keeps). Throws Error naming the type when it is not
// dequantizable or n is not a multiple of block_elems. src needs no alignment.
void dequantize_row(GgmlType type, const std::byte* src, float* dst, int64_t n);

}  // namespace anelm
