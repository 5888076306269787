#include "base/tensor.h"

#include <cstring>

#include "base/error.h"
#include "base/half.h"

namespace anelm {

float element_f32(const TensorView& w, int64_t i) {
    switch (w.dtype) {
        case DType::f32: {
            float f;
            std::memcpy(&f, w.data + i * 4, 4);
            return f;
        }
        case DType::f16: {
            uint16_t h;
            std::memcpy(&h, w.data + i * 2, 2);
            return f16_to_f32(h);
        }
        case DType::bf16: {
            uint16_t h;
            std::memcpy(&h, w.data + i * 2, 2);
            return bf16_to_f32(h);
        }
        default:
            fail("a tensor of dtype {} has no float value", dtype_name(w.dtype));
    }
}

}  // namespace anelm
