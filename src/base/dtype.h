// Element types of weights and values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace anelm {

enum class DType : uint8_t { f32, f16, bf16, i32, count };

constexpr size_t dtype_size(DType t) {
    switch (t) {
        case DType::f32: return 4;
        case DType::f16: return 2;
        case DType::bf16: return 2;
        case DType::i32: return 4;
        case DType::count: break;
    }
    return 0;
}

constexpr std::string_view dtype_name(DType t) {
    switch (t) {
        case DType::f32: return "f32";
        case DType::f16: return "f16";
        case DType::bf16: return "bf16";
        case DType::i32: return "i32";
        case DType::count: break;
    }
    return "?";
}

std::optional<DType> dtype_from_name(std::string_view name);

}  // namespace anelm
