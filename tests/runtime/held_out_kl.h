// KL from the f32 model of stories260K quantized as `spec` (calibrated when
// calib is set), on samples of the model calibration never saw: the quality
// the calibration and --quant auto tests hold to.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "io/json_file.h"
#include "models/model_loader.h"
#include "runtime/perplexity.h"
#include "runtime/session.h"
#include "tokenizer/tokenizer.h"

namespace anelm::test {

inline const std::filesystem::path stories_texts =
    std::filesystem::path(ANELM_SOURCE_DIR) / "tests" / "data" / "stories260K";

inline double held_out_kl(const LoadedModel& m, const Tokenizer& tokenizer,
                          const quant::QuantSpec& spec,
                          std::shared_ptr<const quant::ModelCalibration> calib, int64_t window,
                          int64_t n_windows) {
    SessionOptions so;
    so.n_ctx = window;
    so.prefill_batch = window;
    so.threads = 2;
    so.all_logits = true;
    Session base(m.spec, m.weights, so);
    so.quant = spec;
    so.calibration = std::move(calib);
    Session quantized(m.spec, m.weights, so);
    const auto tokens =
        tokenizer.encode(read_text_file((stories_texts / "samples_heldout.txt").string()), true);
    PerplexityOptions po;
    po.n_ctx = window;
    po.n_chunks = n_windows;
    po.bos_id = tokenizer.bos_id();
    return perplexity(quantized, &base, tokens, po).kl_mean;
}

}  // namespace anelm::test
