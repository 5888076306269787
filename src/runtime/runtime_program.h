// The program every consumer of a model builds (sessions, calibration, the
// quantization search, doctor, convert): the model's graph with its rotary
// pairs in the half-split form (passes/rope_halves.h), the one the ANE
// packages take. Interleaved models (llama2.c, GGUF llama) hold a reordered
// copy of their q and k rows.
// One form everywhere means a matrix quantized by a calibration walk is made
// of the same rows, in the same groups, as the one generate or convert would
// make, so theirs can be taken as the walk made it (ModelCalibration::made_of).
#pragma once

#include "io/model_spec.h"
#include "io/weight_store.h"
#include "ir/program.h"
#include "models/models.h"

namespace anelm {

ir::Program runtime_program(const ModelSpec& spec, const WeightStore& weights,
                            const ProgramOptions& options);

}  // namespace anelm
