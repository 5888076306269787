#include "exec/mil/slot.h"

#include "exec/cpu/kernels/kernels.h"

namespace anelm::milexec {

namespace {
const std::vector<int64_t> no_shape;
}

const std::vector<int64_t>& Slot::shape() const {
    if (tensor) return tensor->shape;
    if (weight) return weight->shape;
    if (state) return state->shape;
    return no_shape;
}

mil::DataType Slot::dtype() const {
    if (tensor) return tensor->dtype;
    if (weight) return mil::FLOAT16;
    if (state) return state->dtype;
    return mil::STRING;
}

Tensor weight_to_tensor(const Weight& w) {
    Tensor t = make_tensor(mil::FLOAT16, w.shape);
    kernels::f16_to_f32_row(w.bits, t.numel(), t.f.data());
    return t;
}

Slot slot_from_f16(std::vector<int64_t> shape, std::vector<uint16_t> bits) {
    auto w = std::make_shared<Weight>();
    w->shape = std::move(shape);
    w->owned = std::move(bits);
    w->bits = w->owned.data();
    Slot s;
    if (static_cast<int64_t>(w->owned.size()) >= weight_min_elements)
        s.weight = std::move(w);
    else
        s.tensor = std::make_shared<const Tensor>(weight_to_tensor(*w));
    return s;
}

}  // namespace anelm::milexec
