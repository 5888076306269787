#include "exec/mil/tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"

namespace anelm::milexec {

int64_t Tensor::numel() const {
    return shape_numel(shape);
}

bool is_float_type(mil::DataType dtype) {
    return dtype == mil::FLOAT16 || dtype == mil::FLOAT32 || dtype == mil::FLOAT64 ||
           dtype == mil::BFLOAT16;
}

int64_t shape_numel(const std::vector<int64_t>& shape, std::string_view where) {
    if (const std::optional<int64_t> n = coreml::element_count(shape)) return *n;
    for (int64_t d : shape)
        if (d < 0)
            fail("{}: shape {} has an unknown or negative dimension", where, shape_text(shape));
    fail("{}: shape {} has more than 2^40 elements", where, shape_text(shape));
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
