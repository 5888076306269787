#include "exec/mil/tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace anelm::milexec {

int64_t Tensor::numel() const {
    return shape_numel(shape);
}

bool is_float_type(mil::DataType dtype) {
    return dtype == mil::FLOAT16 || dtype == mil::FLOAT32 || dtype == mil::FLOAT64 ||
           dtype == mil::BFLOAT16;
}

int64_t shape_numel(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

std::string shape_text(const std::vector<int64_t>& shape) {
    return fmt::format("[{}]", fmt::join(shape, ", "));
}

Tensor make_tensor(mil::DataType dtype, std::vector<int64_t> shape) {
    Tensor t;
    t.dtype = dtype;
    t.shape = std::move(shape);
    if (is_float_type(dtype))
        t.f.assign(static_cast<size_t>(t.numel()), 0.0f);
    else
        t.i.assign(static_cast<size_t>(t.numel()), 0);
    return t;
}

}  // namespace anelm::milexec
