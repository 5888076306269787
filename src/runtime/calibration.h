// Calibration: one pass of the f32 model over a text, collecting what every
// linear layer's inputs look like (quant/input_stats.h) for data-aware
// palettization.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/progress.h"
#include "io/model_spec.h"
#include "io/weight_store.h"
#include "quant/input_stats.h"
#include "quant/quant_spec.h"
#include "tokenizer/tokenizer.h"

namespace anelm {

// The first max_tokens tokens (0: all) of the UTF-8 text at `path` as windows
// of `window` tokens (the last may be shorter), each starting with BOS where
// the tokenizer starts sequences with one. Throws Error naming the file when
// it is missing, not UTF-8 text, empty, or shorter than one window.
std::vector<std::vector<int32_t>> calibration_windows(const std::string& path,
                                                      const Tokenizer& tokenizer, int64_t window,
                                                      int64_t max_tokens = 0);

// Runs every window through the model from position 0 (all of them in one
// call, so the rows of every window are held at once) and accumulates the
// Gram matrix of each linear layer's inputs (its diagonal alone past
// quant::max_gram_inputs). Without `sequential` the model is the f32 one;
// with it, each weight is quantized as that spec says (calibrated on what
// came before) just before its first reader runs, so every layer's inputs are
// what the quantized layers before it make, as GPTQ takes them; the matrices
// made on the way are kept for quantize_job. progress sees nodes run out of all.
std::shared_ptr<const quant::ModelCalibration> calibrate(
    const ModelSpec& spec, const WeightStore& weights,
    const std::vector<std::vector<int32_t>>& windows, quant::CalibMethod method, int threads,
    const ProgressFn& progress = {}, const quant::QuantSpec* sequential = nullptr);

}  // namespace anelm
