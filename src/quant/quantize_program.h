// Quantizing a program's weights: every embed and linear weight as the spec
// says for its component, in place.
#pragma once

#include <cstdint>

#include "base/progress.h"
#include "base/thread_pool.h"
#include "ir/program.h"
#include "quant/input_stats.h"
#include "quant/quant_spec.h"

namespace anelm::quant {

// Sets Weight::quantized of every weight an embed or linear node reads, with
// the spec's choice for its component: the embed node's table is `embed`, the
// linear weights of the layers `ffn`, the LM head `head`. A tied embedding read
// both as table and as LM head, with different choices for the two, is split:
// the head nodes move to a new weight "<name>:head" on the same bytes. Weights
// the spec leaves alone stay dense. Every tensor uses `seed` (as anelm quantize
// does), so the result depends on neither the thread count nor the order.
// progress sees the number of weights quantized so far out of all. With
// calibration, the LUT weights it has statistics for are palettized with them.
void quantize_program(ir::Program& program, const QuantSpec& spec, ThreadPool& pool,
                      const ProgressFn& progress = {}, uint64_t seed = 0,
                      const ModelCalibration* calibration = nullptr);

}  // namespace anelm::quant
