#include "coreml/mil_types.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace anelm::coreml {

std::string_view mil_dtype_name(mil::DataType dtype) {
    switch (dtype) {
        case mil::BOOL:
            return "bool";
        case mil::STRING:
            return "string";
        case mil::FLOAT16:
            return "fp16";
        case mil::FLOAT32:
            return "fp32";
        case mil::FLOAT64:
            return "fp64";
        case mil::BFLOAT16:
            return "bf16";
        case mil::INT8:
            return "int8";
        case mil::INT16:
            return "int16";
        case mil::INT32:
            return "int32";
        case mil::INT64:
            return "int64";
        case mil::INT4:
            return "int4";
        case mil::UINT8:
            return "uint8";
        case mil::UINT16:
            return "uint16";
        case mil::UINT32:
            return "uint32";
        case mil::UINT64:
            return "uint64";
        case mil::UINT4:
            return "uint4";
        case mil::UINT2:
            return "uint2";
        case mil::UINT1:
            return "uint1";
        case mil::UINT6:
            return "uint6";
        case mil::UINT3:
            return "uint3";
        case mil::FLOAT8E4M3FN:
            return "fp8e4m3fn";
        case mil::FLOAT8E5M2:
            return "fp8e5m2";
        default:
            return "unknown";
    }
}

std::optional<BlobDType> blob_dtype_of(mil::DataType dtype) {
    switch (dtype) {
        case mil::FLOAT16:
            return BlobDType::f16;
        case mil::FLOAT32:
            return BlobDType::f32;
        case mil::BFLOAT16:
            return BlobDType::bf16;
        case mil::UINT8:
            return BlobDType::u8;
        case mil::INT8:
            return BlobDType::i8;
        case mil::INT16:
            return BlobDType::i16;
        case mil::UINT16:
            return BlobDType::u16;
        case mil::INT32:
            return BlobDType::i32;
        case mil::UINT32:
            return BlobDType::u32;
        case mil::INT4:
            return BlobDType::i4;
        case mil::UINT1:
            return BlobDType::u1;
        case mil::UINT2:
            return BlobDType::u2;
        case mil::UINT3:
            return BlobDType::u3;
        case mil::UINT4:
            return BlobDType::u4;
        case mil::UINT6:
            return BlobDType::u6;
        case mil::FLOAT8E4M3FN:
            return BlobDType::f8e4m3fn;
        case mil::FLOAT8E5M2:
            return BlobDType::f8e5m2;
        default:
            return std::nullopt;
    }
}

std::vector<int64_t> tensor_shape(const mil::TensorType& type) {
    std::vector<int64_t> shape;
    for (const mil::Dimension& d : type.dimensions())
        shape.push_back(d.has_constant() ? static_cast<int64_t>(d.constant().size()) : -1);
    return shape;
}

std::optional<int64_t> element_count(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape)
        if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > max_tensor_elements)
            return std::nullopt;
    return n;
}

std::string value_type_text(const mil::ValueType& type) {
    if (type.has_tensortype()) {
        const mil::TensorType& t = type.tensortype();
        if (t.rank() < 0) return fmt::format("{}[*]", mil_dtype_name(t.datatype()));
        std::vector<std::string> dims;
        for (int64_t d : tensor_shape(t)) dims.push_back(d < 0 ? "?" : std::to_string(d));
        return fmt::format("{}[{}]", mil_dtype_name(t.datatype()), fmt::join(dims, ", "));
    }
    if (type.has_statetype())
        return fmt::format("state<{}>", value_type_text(type.statetype().wrappedtype()));
    if (type.has_listtype())
        return fmt::format("list<{}>", value_type_text(type.listtype().type()));
    if (type.has_tupletype()) return "tuple";
    if (type.has_dictionarytype()) return "dict";
    return "none";
}

}  // namespace anelm::coreml
