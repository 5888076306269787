#include "base/dtype.h"

namespace anelm {

std::optional<DType> dtype_from_name(std::string_view name) {
    for (int i = 0; i < static_cast<int>(DType::count); ++i) {
        auto t = static_cast<DType>(i);
        if (t != DType::blocks && dtype_name(t) == name) return t;
    }
    return std::nullopt;
}

}  // namespace anelm
