// The constexpr_* ops (compressed weights), evaluated once when a function is
// compiled: constexpr_lut_to_dense (iOS16 attribute form and iOS18 form),
// constexpr_blockwise_shift_scale, constexpr_affine_dequantize, constexpr_cast.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "coreml/blob_table.h"
#include "exec/mil/slot.h"

namespace anelm::milexec {

bool is_constexpr(std::string_view type);

// A parameter of the op: a literal value (decoded by the op, so packed codes
// can be read straight from their blob) or the slot of a constant it names.
struct ConstInput {
    const mil::Value* literal = nullptr;
    Slot slot;
    bool empty() const { return !literal && slot.empty(); }
};
// The parameter called `key` (from the op's inputs or attributes), empty when absent.
using ConstParam = std::function<ConstInput(const std::string& key)>;

// The op's dense result: fp16 results stay fp16 (a Weight when large). With
// keep_codes, a palettized weight the quantized products can read stays as
// its codes and tables instead (Weight::palettized), ready for `dot`'s products.
Slot run_constexpr(const mil::Operation& op, const ConstParam& param,
                   const coreml::BlobTable& blobs, const std::string& where,
                   bool keep_codes = false, QuantDot dot = QuantDot::exact);

}  // namespace anelm::milexec
