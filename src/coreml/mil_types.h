// The MIL type vocabulary: data type names, the MILBlob code that stores each
// type, tensor shapes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coreml/milblob.h"
#include "coreml/proto/mil.pb.h"

namespace anelm::coreml {

namespace mil = ::CoreML::Specification::MILSpec;

// Short names as coremltools prints them: fp16, fp32, int32, uint4, bool, string.
std::string_view mil_dtype_name(mil::DataType dtype);

// The MILBlob code for a tensor of this type, or nothing (bool, string, 64-bit).
std::optional<BlobDType> blob_dtype_of(mil::DataType dtype);

// Dimensions of a tensor type, -1 for an unknown one.
std::vector<int64_t> tensor_shape(const mil::TensorType& type);

// No tensor may have more elements: none needs them, and every element count
// and byte size then fits in 64 bits with room to spare.
inline constexpr int64_t max_tensor_elements = int64_t{1} << 40;

// The element count of a shape, or nothing when a dimension is negative
// (unknown) or the count exceeds max_tensor_elements.
std::optional<int64_t> element_count(const std::vector<int64_t>& shape);

// "fp16[1, 2, 16, 8]", "state<fp16[2, 4]>", "int32[]" for a scalar.
std::string value_type_text(const mil::ValueType& type);

}  // namespace anelm::coreml
