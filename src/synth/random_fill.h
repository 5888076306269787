// Deterministic random weights, filled in parallel. Each block of a tensor draws
// from its own generator, keyed by the seed, the tensor's name and the block's
// index, so the bytes do not depend on the number of threads or on which other
// tensors the model has.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "base/dtype.h"
#include "base/thread_pool.h"

namespace anelm::synth {

// Values with mean 0 and standard deviation `std`: a sum of four uniforms, scaled
// (bounded at 3.46 std, otherwise close to normal, and one 64-bit draw per value).
void fill_normal(std::span<std::byte> out, DType dtype, float std, uint64_t seed,
                 std::string_view name, ThreadPool& pool);

void fill_constant(std::span<std::byte> out, DType dtype, float value);

}  // namespace anelm::synth
