#include "exec/mil/slot.h"

#include <algorithm>

#include "kernels/kernels.h"

namespace anelm::milexec {

namespace {
const std::vector<int64_t> no_shape;
}

const std::vector<int64_t>& Slot::shape() const {
    if (tensor) return tensor->shape;
    if (weight) return weight->shape;
    if (state) return state->shape;
    if (block) return block->shape;
    return no_shape;
}

mil::DataType Slot::dtype() const {
    if (tensor) return tensor->dtype;
    if (weight) return mil::FLOAT16;
    if (state) return state->dtype;
    if (block) return block->state->dtype;
    return mil::STRING;
}

Tensor weight_to_tensor(const Weight& w) {
    Tensor t = make_tensor(mil::FLOAT16, w.shape);
    if (!w.palettized) {
        kernels::f16_to_f32_row(w.bits, t.numel(), t.f.data());
        return t;
    }
    const int64_t n_out = w.shape.at(0), n_in = t.numel() / std::max<int64_t>(n_out, 1);
    const kernels::QuantMatrix q = quant_matrix(w);
    for (int64_t o = 0; o < n_out; ++o) kernels::quant_decode_row(q, o, 0, n_in, &t.f[o * n_in]);
    return t;
}

Tensor block_to_tensor(const StateBlock& b) {
    Tensor t;
    t.dtype = b.state->dtype;
    t.shape = b.shape;
    t.f.assign(b.data(), b.data() + shape_numel(b.shape));
    return t;
}

kernels::QuantMatrix quant_matrix(const Weight& w) {
    const Palettized& p = *w.palettized;
    kernels::QuantMatrix q;
    q.kind = kernels::QuantKind::lut;
    q.nbits = p.nbits;
    q.n_out = w.shape.at(0);
    q.n_in = shape_numel(w.shape) / std::max<int64_t>(q.n_out, 1);
    q.group = p.group;
    q.codes = p.codes;
    q.lut = p.tables.data();
    return p.int8_dot ? p.int8_dot->attach(q) : q;
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
