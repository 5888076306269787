// Sorting the values of a weight group, the largest cost of palettization.
#pragma once

#include <span>

namespace anelm::quant {

// Ascending sort of finite floats (-0 before +0): an LSD radix sort on their
// order-preserving bit patterns that skips the byte positions no value
// differs in, so values that came from f16 or bf16 take two or three passes.
void sort_floats(std::span<float> values);

}  // namespace anelm::quant
