// Element types of weights and values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace anelm {

// blocks: a GGUF tensor's ggml blocks as stored (TensorView says which type).
enum class DType : uint8_t { f32, f16, bf16, i32, blocks, count };

constexpr size_t dtype_size(DType t) {
    switch (t) {
        case DType::f32: return 4;
        case DType::f16: return 2;
        case DType::bf16: return 2;
        case DType::i32: return 4;
        case DType::blocks:  // see TensorView::n_bytes
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
        case DType::blocks:
            return "blocks";
        case DType::count: break;
    }
    return "?";
}

// The element type of a name ("f16"); blocks has no name to parse.
std::optional<DType> dtype_from_name(std::string_view name);

}  // namespace anelm
