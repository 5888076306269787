// Runtime values of the MIL interpreter: a tensor with its declared MIL data
// type, float types held as f32 and integer and bool types as int32.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "coreml/mil_types.h"

namespace anelm::milexec {

namespace mil = coreml::mil;

struct Tensor {
    mil::DataType dtype =
        mil::DataType::FLOAT32;  // as declared (FLOAT16, FLOAT32, INT32, BOOL, ...)
    std::vector<int64_t> shape;
    std::vector<float> f;    // float types (fp16 values held as f32)
    std::vector<int32_t> i;  // integer and bool types
    int64_t numel() const;
};

// FLOAT16, FLOAT32, FLOAT64, BFLOAT16: held in Tensor::f; everything else in Tensor::i.
bool is_float_type(mil::DataType dtype);

// The element count of a shape; throws Error, `where` first, when a dimension
// is negative (unknown) or there are more than coreml::max_tensor_elements.
int64_t shape_numel(const std::vector<int64_t>& shape, std::string_view where = "tensor");
std::string shape_text(const std::vector<int64_t>& shape);  // "[1, 4, 16]"

// A zero-filled tensor of this type and shape.
Tensor make_tensor(mil::DataType dtype, std::vector<int64_t> shape);

}  // namespace anelm::milexec
