// Quantizing a program's weights: every embed and linear weight as the spec
// says for its component, in place.
#pragma once

#include <cstdint>
#include <vector>

#include "base/progress.h"
#include "base/thread_pool.h"
#include "ir/program.h"
#include "quant/input_stats.h"
#include "quant/quant_spec.h"

namespace anelm::quant {

// A weight to quantize: its component (the first it is read as) and choice.
struct WeightJob {
    ir::WeightId weight = ir::no_weight;
    Component component = Component::ffn;
    QuantChoice choice;
    bool linear = false;  // read by a linear node (calibration sees its inputs)
};

// The weights quantize_program quantizes, in model order, with the tied
// embedding split first where its two uses take different choices (see
// below); choices of none are left out. spec.per_weight overrides a
// component's choice by weight name. Also readies the GGUF block matrices the
// spec leaves alone (run as stored, or made dense).
std::vector<WeightJob> quantization_jobs(ir::Program& program, const QuantSpec& spec);

// Quantizes one job's weight as it says (calibrated where calibration has
// statistics for it, an embedding by its token counts; factors may be null),
// setting Weight::quantized, for integer dot products with int8_dot.
void quantize_job(ir::Program& program, const WeightJob& job, ThreadPool& pool, uint64_t seed,
                  const ModelCalibration* calibration, GramFactorCache* factors,
                  bool int8_dot = false);

// Sets Weight::quantized of every weight an embed or linear node reads, with
// the spec's choice for its component: the embed node's table is `embed`, the
// linear weights of the layers `ffn`, the LM head `head`. A tied embedding read
// both as table and as LM head, with different choices for the two, is split:
// the head nodes move to a new weight "<name>:head" on the same bytes. Weights
// the spec leaves alone stay dense. Every tensor uses `seed` (as anelm quantize
// does), so the result depends on neither the thread count nor the order.
// progress sees the number of weights quantized so far out of all. With
// calibration, the LUT weights it has statistics for are palettized with them,
// and a LUT embedding is weighted by how often the text read each row.
void quantize_program(ir::Program& program, const QuantSpec& spec, ThreadPool& pool,
                      const ProgressFn& progress = {}, uint64_t seed = 0,
                      const ModelCalibration* calibration = nullptr);

}  // namespace anelm::quant
