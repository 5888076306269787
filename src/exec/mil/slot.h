// What a name of a running function holds: a tensor, an fp16 constant kept in
// its storage form (weights: no f32 copy), or a state's own buffer (read_state
// and function state inputs), read without copying.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "exec/mil/tensor.h"

namespace anelm::milexec {

// An fp16 constant as stored: bits in a blob (which must outlive the
// function) or in `owned` (a dequantized constexpr result).
struct Weight {
    std::vector<int64_t> shape;
    const uint16_t* bits = nullptr;
    std::vector<uint16_t> owned;
    std::shared_ptr<const Weight> base;  // a reshaped view keeps its source alive
};

struct Slot {
    std::shared_ptr<const Tensor> tensor;
    std::shared_ptr<const Weight> weight;
    Tensor* state = nullptr;
    std::string text;  // string constants (pad_type, mode, dtype)

    bool empty() const { return !tensor && !weight && !state && text.empty(); }
    const std::vector<int64_t>& shape() const;
    mil::DataType dtype() const;
};

// An fp16 weight's values as an f32 tensor.
Tensor weight_to_tensor(const Weight& w);
// fp16 values as a slot: an f32 tensor when small, the bits themselves (a
// Weight) from weight_min_elements on.
Slot slot_from_f16(std::vector<int64_t> shape, std::vector<uint16_t> bits);

// fp16 constants of at least this many elements stay fp16 (weights, tables).
inline constexpr int64_t weight_min_elements = 4096;

}  // namespace anelm::milexec
