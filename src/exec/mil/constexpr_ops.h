// The constexpr_* ops (compressed weights), evaluated once when a function is
// compiled: constexpr_lut_to_dense (iOS16 attribute form and iOS18 form),
// constexpr_blockwise_shift_scale, constexpr_affine_dequantize, constexpr_cast.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "exec/mil/slot.h"

namespace anelm::milexec {

bool is_constexpr(std::string_view type);

// A parameter of the op by key (from its inputs or attributes), empty when absent.
using ConstParam = std::function<Slot(const std::string& key)>;

// The op's dense result: fp16 results stay fp16 (a Weight when large).
Slot run_constexpr(const mil::Operation& op, const ConstParam& param, const std::string& where);

}  // namespace anelm::milexec
