#include "exec/mil/states.h"

#include <algorithm>

#include "base/error.h"

namespace anelm::milexec {

Tensor& States::get(const std::string& name, mil::DataType dtype,
                    const std::vector<int64_t>& shape) {
    auto it = states_.find(name);
    if (it == states_.end()) {
        shape_numel(shape, fmt::format("state {}", name));  // no unknown dimensions
        return states_.emplace(name, make_tensor(dtype, shape)).first->second;
    }
    if (it->second.dtype != dtype || it->second.shape != shape)
        fail("state {}: exists as {}{}, a function declares it {}{}", name,
             coreml::mil_dtype_name(it->second.dtype), shape_text(it->second.shape),
             coreml::mil_dtype_name(dtype), shape_text(shape));
    return it->second;
}

const Tensor& States::at(const std::string& name) const {
    auto it = states_.find(name);
    if (it == states_.end()) fail("state {}: no such state", name);
    return it->second;
}

void States::reset() {
    for (auto& [name, t] : states_) {
        std::fill(t.f.begin(), t.f.end(), 0.0f);
        std::fill(t.i.begin(), t.i.end(), 0);
    }
}

}  // namespace anelm::milexec
