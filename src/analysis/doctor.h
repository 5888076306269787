// The FP16 doctor: runs calibration prompts through a model in f32, measures
// the peak |value| of every named value, finds where a half-precision device
// run first goes wrong, and checks that residual scaling by the computed alpha
// brings the device run back to f32's tokens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/progress.h"
#include "exec/cpu/executor.h"
#include "io/model_spec.h"
#include "io/weight_store.h"
#include "runtime/model.h"

namespace anelm {

struct DoctorPrompt {
    std::string name;  // "chat", "code", ... or "prompt N" from a file
    std::vector<int32_t> tokens;
};

struct DoctorOptions {
    double target = 32768;     // the residual peak that alpha aims for
    double divergence = 1e-2;  // relative error that counts as diverged
    Precision device = Precision::ane;
    int threads = 0;  // 0: physical cores
};

// The peak |value| of one named value over every calibration token.
struct ValuePeak {
    std::string name;    // blk.3.ffn_out
    std::string op;      // linear
    // residual, norm_input, attention_scores, mlp_hidden, other; for a delta
    // rule: softplus_input (a + dt_bias) and recurrent_state (the state after
    // the prompt, as is and times the ANE lowering's boost)
    std::string kind;
    int32_t layer = -1;  // -1 outside the layers
    double peak = 0;     // softplus_input: the largest input itself, not its magnitude
    // Share of the nonzero values below half's smallest normal (2^-14), which
    // the Neural Engine flushes to zero.
    double subnormal = 0;
    bool overflows = false;  // peak > 65,504
    bool at_risk = false;    // peak > 65,504 / 4
};

// Per layer: the largest peak of each kind, f32 and in the scaled device run.
struct LayerPeaks {
    int32_t layer = 0;
    double residual = 0, norm_input = 0, attention_scores = 0, mlp_hidden = 0;
    double residual_scaled = 0, all_scaled = 0;
};

struct DeviceRun {
    float alpha = 1;
    int64_t tokens = 0;
    int64_t top1_agree = 0;      // rows whose argmax equals f32's
    double max_logit_error = 0;  // max over rows of max|d| / max|f32 logits|
    bool non_finite = false;     // some logit was inf or NaN
    // The first value (in program order, over all prompts) that diverged.
    std::string first_value, first_op, first_prompt;
    int32_t first_layer = -1;
    double first_error = 0;  // its relative error (inf when non-finite)
};

struct DoctorReport {
    std::string model;
    std::string architecture;
    int64_t n_layer = 0;
    std::string device_precision;
    double target = 0;
    std::vector<std::string> prompts;
    int64_t tokens = 0;
    std::vector<ValuePeak> values;  // every named value, program order
    std::vector<LayerPeaks> layers;
    double residual_peak = 0;  // the largest residual-stream peak
    float alpha = 1;
    DeviceRun unscaled, scaled;
    double seconds = 0;
};

// progress counts model runs (three per prompt).
DoctorReport run_doctor(const ModelSpec& spec, const WeightStore& weights,
                        const std::vector<DoctorPrompt>& prompts, const DoctorOptions& options,
                        const ProgressFn& progress = {});

// Built-in calibration texts: chat, code, long repetition, multilingual.
struct CalibrationText {
    const char* name;
    std::string text;
};
std::vector<CalibrationText> default_calibration_texts();
// A prompts file: a JSON array of strings, or else one prompt per non-empty line.
std::vector<CalibrationText> read_calibration_file(const std::string& path);
// The prompts as token ids, each cut to n_tokens: the built-in texts (the chat
// one through the model's chat template when it has one) or prompts_file's.
std::vector<DoctorPrompt> calibration_prompts(const Model& model, const std::string& model_path,
                                              const std::string& prompts_file, int64_t n_tokens);

// The residual scale for --fp16-scale auto: the f32 runs of the doctor alone
// (peaks, no device runs), then residual_scale_for_peak.
float measure_residual_scale(const ModelSpec& spec, const WeightStore& weights,
                             const std::vector<DoctorPrompt>& prompts,
                             const DoctorOptions& options);

}  // namespace anelm
