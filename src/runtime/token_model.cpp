#include "runtime/token_model.h"

#include "base/error.h"

namespace anelm {

std::span<const float> TokenModel::verify(std::span<const int32_t>) {
    fail("this model cannot verify drafted tokens");
}

void TokenModel::rewind(int64_t) {
    fail("this model cannot rewind");
}

}  // namespace anelm
