// What integer dot products read of a LUT, int8 or int4 matrix besides its
// codes: the lut tables rounded to int8 and, where the leaves read the codes
// in another layout, the codes again in it. Owned apart from the codes, so
// that codes held elsewhere (a Core ML blob) are multiplied in place.
#pragma once

#include <cstdint>
#include <vector>

#include "base/aligned_allocator.h"
#include "kernels/quant_isa.h"
#include "kernels/quant_kernels.h"

namespace anelm::quant {

struct Int8DotParts {
    std::vector<int8_t> dot_lut;   // lut: the tables as int8 entries
    std::vector<float> dot_scale;  // lut: each table's scale
    kernels::Int8Layout int8_layout = kernels::Int8Layout::packed;
    std::vector<uint8_t, AlignedAllocator<uint8_t>> int8_codes;  // when not packed

    // w multiplied by integer dot products with these parts.
    kernels::QuantMatrix attach(kernels::QuantMatrix w) const;
};

// The parts of w (its codes and f16 tables or scales) for `leaves` (null:
// the scalar reference, which reads packed codes).
Int8DotParts int8_dot_parts(const kernels::QuantMatrix& w, const kernels::QuantIsa* leaves);

}  // namespace anelm::quant
