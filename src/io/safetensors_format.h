// Facts of the safetensors format shared by the reader and the writer.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "base/dtype.h"

namespace anelm::safetensors {

// The header length is a little-endian u64 in the first 8 bytes.
constexpr size_t header_length_size = 8;
// The reference implementation refuses longer headers; so do we, so that a
// corrupt length cannot make us parse gigabytes of tensor data as JSON.
constexpr size_t header_max_size = 100'000'000;
// Writers pad the header with spaces so the data starts 8-byte aligned.
constexpr size_t header_alignment = 8;

constexpr std::string_view dtype_name(DType t) {
    switch (t) {
        case DType::f32:
            return "F32";
        case DType::f16:
            return "F16";
        case DType::bf16:
            return "BF16";
        case DType::i32:
            return "I32";
        case DType::blocks:  // GGUF's block formats have no safetensors name
        case DType::count:
            break;
    }
    return "?";
}

constexpr std::optional<DType> dtype_from_name(std::string_view name) {
    for (int i = 0; i < static_cast<int>(DType::count); ++i) {
        const auto t = static_cast<DType>(i);
        if (safetensors::dtype_name(t) == name) return t;
    }
    return std::nullopt;
}

// Names the format defines that anelm does not read; they get a clearer
// message than a name that is not safetensors at all.
constexpr bool dtype_is_known_unsupported(std::string_view name) {
    constexpr std::string_view names[] = {
        "BOOL", "U8",      "I8",      "I16",     "U16", "U32",     "I64",     "U64",
        "F64",  "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4",  "F6_E2M3", "F6_E3M2", "C64"};
    for (std::string_view n : names)
        if (n == name) return true;
    return false;
}

}  // namespace anelm::safetensors
