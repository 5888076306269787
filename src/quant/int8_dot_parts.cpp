#include "quant/int8_dot_parts.h"

namespace anelm::quant {

kernels::QuantMatrix Int8DotParts::attach(kernels::QuantMatrix w) const {
    w.int8_dot = true;
    w.dot_lut = dot_lut.empty() ? nullptr : dot_lut.data();
    w.dot_scale = dot_scale.empty() ? nullptr : dot_scale.data();
    w.int8_layout = int8_layout;
    w.int8_codes = int8_codes.empty() ? nullptr : int8_codes.data();
    return w;
}

Int8DotParts int8_dot_parts(const kernels::QuantMatrix& w, const kernels::QuantIsa* leaves) {
    Int8DotParts p;
    if (w.kind == kernels::QuantKind::lut) {
        const int64_t n_tables = (w.n_out + w.group - 1) / w.group;
        p.dot_lut.resize(static_cast<size_t>(n_tables << w.nbits));
        p.dot_scale.resize(static_cast<size_t>(n_tables));
        kernels::round_tables_to_int8(w.lut, n_tables, w.nbits, p.dot_lut.data(),
                                      p.dot_scale.data());
    }
    const kernels::QuantMatrix packed = p.attach(w);
    if (!leaves || !kernels::int8_dot_applies(packed)) return p;
    const kernels::Int8Layout layout = kernels::int8_layout_for(*leaves, packed);
    if (layout == kernels::Int8Layout::packed) return p;
    p.int8_codes.resize(static_cast<size_t>(w.n_out * w.row_bytes()));
    kernels::write_int8_layout(packed, layout, p.int8_codes.data());
    p.int8_layout = layout;
    return p;
}

}  // namespace anelm::quant
