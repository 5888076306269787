// What a name of a running function holds: a tensor, an fp16 constant kept in
// its storage form (weights: no f32 copy), a state's own buffer (read_state
// and function state inputs) or a block of it (a slice), read without copying.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "exec/mil/tensor.h"
#include "kernels/quant_kernels.h"
#include "quant/int8_dot_parts.h"

namespace anelm::milexec {

// How the products of palettized weights sum: exact (f32 activations times
// the tables' f16 values) or int8 (integer dot products, as the CPU
// executor's --quant-dot int8: kernels::int8_dot_applies).
enum class QuantDot { exact, int8 };

// A palettized weight [n_out, n_in, 1...] kept as its blob's packed codes:
// row o holds n_in codes of nbits (LSB first, whole bytes per row) and reads
// table o / group. The quantized products multiply it without a dense copy.
struct Palettized {
    int nbits = 4;
    int64_t group = 1;
    const uint8_t* codes = nullptr;  // in the blob, which must outlive the function
    std::vector<uint16_t> tables;    // f16 [n_out / group, 2^nbits]
    // Set for QuantDot::int8: the int8 tables (and codes in another layout
    // where the leaves need one) the integer products read.
    std::unique_ptr<const quant::Int8DotParts> int8_dot;
};

// An fp16 constant as stored: bits in a blob (which must outlive the
// function) or in `owned` (a dequantized constexpr result), or codes and
// tables (`palettized`, bits null).
struct Weight {
    std::vector<int64_t> shape;
    const uint16_t* bits = nullptr;
    std::vector<uint16_t> owned;
    std::shared_ptr<const Weight> base;  // a reshaped view keeps its source alive
    std::shared_ptr<const Palettized> palettized;
};

// A contiguous run of a float state's values (one layer's rows of a KV
// cache), read in place until the state changes.
struct StateBlock {
    const Tensor* state = nullptr;
    int64_t offset = 0;
    std::vector<int64_t> shape;
    const float* data() const { return state->f.data() + offset; }
};

struct Slot {
    std::shared_ptr<const Tensor> tensor;
    std::shared_ptr<const Weight> weight;
    Tensor* state = nullptr;
    std::shared_ptr<const StateBlock> block;
    std::string text;  // string constants (pad_type, mode, dtype)

    bool empty() const { return !tensor && !weight && !state && !block && text.empty(); }
    const std::vector<int64_t>& shape() const;
    mil::DataType dtype() const;
};

// Slot `index` of a function run: what the run made there, else the
// function's constant (runs keep constants where they were compiled).
inline const Slot& run_value(const std::vector<Slot>& made, const std::vector<Slot>& constants,
                             int index) {
    const Slot& s = made[static_cast<size_t>(index)];
    return s.empty() ? constants[static_cast<size_t>(index)] : s;
}

// An fp16 weight's values as an f32 tensor.
Tensor weight_to_tensor(const Weight& w);
// A state block's values as a tensor of their own.
Tensor block_to_tensor(const StateBlock& b);
// A palettized weight as the quantized kernels read it: [shape[0], the rest].
kernels::QuantMatrix quant_matrix(const Weight& w);
// fp16 values as a slot: an f32 tensor when small, the bits themselves (a
// Weight) from weight_min_elements on.
Slot slot_from_f16(std::vector<int64_t> shape, std::vector<uint16_t> bits);

// fp16 constants of at least this many elements stay fp16 (weights, tables).
inline constexpr int64_t weight_min_elements = 4096;

}  // namespace anelm::milexec
