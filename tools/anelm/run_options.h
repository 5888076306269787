// Options shared by the subcommands that run a model.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "exec/mil/function.h"
#include "runtime/model.h"
#include "runtime/quant_search.h"
#include "runtime/sampler.h"
#include "runtime/session.h"

namespace anelm::cli {

// --calib FILE and --calib-method: data-aware LUT palettization.
struct CalibOptions {
    std::string path;
    std::string method = "gptq";
    int64_t max_tokens = 4096;  // of the file, in windows of the context
    std::string inputs = "quantized";  // quantized (sequential) or f32
};

struct RunOptions {
    int threads = 0;
    int64_t n_ctx = 4096;
    std::string precision_name = "f32";
    std::string kv = "f16";  // KvType's name
    std::string quant = "none";
    std::string quant_dot = "int8";   // int8 or exact
    std::string fp16_scale = "none";  // none, auto or a power of two
    bool mmap = false;
    CalibOptions calib;
    CLI::Option* ctx_flag = nullptr;  // counts whether --ctx was given

    // Throws Error on a bad --quant spec or --fp16-scale; "auto" measures the
    // model on the doctor's calibration prompts (f32 runs) to choose alpha.
    // With --calib, runs the calibration (its windows as long as the context).
    // Says on stderr when --ctx is past the model's trained length.
    SessionOptions session(const Model& model) const;
    // The context the session holds: --ctx, else 4096, at most the model's trained length.
    int64_t context_for(const ModelSpec& spec) const;
    // Why a prompt does not fit that context, for the error: "raise --ctx" or
    // "the model's trained length".
    std::string context_limit_reason(const ModelSpec& spec) const;
};

// --fp16-scale's value: none (1), auto (measured as anelm doctor does) or a
// power of two; throws Error for anything else.
float fp16_scale_option(const std::string& text, const Model& model, int threads);

// How the MIL interpreter runs a converted folder at --precision: f32 in f32,
// f16 rounded to half, ane rounded to half with subnormals flushed.
milexec::Rounding converted_rounding(const std::string& precision_name);
// How it multiplies palettized weights at --quant-dot: int8 or exact, as the
// CPU executor's quantized weights.
milexec::QuantDot converted_quant_dot(const std::string& quant_dot);

void add_run_options(CLI::App& app, RunOptions& options);
// --kv f16|q8|k16v8 (bench takes it without the rest of the run options).
void add_kv_option(CLI::App& app, RunOptions& options);
void add_calib_options(CLI::App& app, CalibOptions& options);
// The statistics --calib asks for, with a progress bar, over windows of
// `window` tokens; null without --calib. With the spec the model will be
// quantized as (null for auto's search, which needs the f32 model's), taken
// layer after layer on the quantized layers' outputs unless --calib-inputs
// f32. Throws Error for a model without a tokenizer and for a bad file
// (runtime/calibration.h).
std::shared_ptr<const quant::ModelCalibration> calibration_for(
    const Model& model, const CalibOptions& options, int64_t window, int threads,
    std::vector<std::vector<int32_t>>* windows, const quant::QuantSpec* spec);

// --quant auto's search (runtime/quant_search.h) with a progress bar; throws
// Error naming --quant when there is no calibration. The calibration becomes
// one that also holds the matrices the search made of its choices.
AutoQuantResult search_widths(const Model& model, const std::string& quant_text,
                              const quant::QuantSpec& base,
                              std::shared_ptr<const quant::ModelCalibration>& calibration,
                              const std::vector<std::vector<int32_t>>& windows,
                              const AutoQuantTarget& target, int threads);
// "auto: 4.43 bits per weight, KL predicted 0.051, measured 0.049 (512 tokens);
// lut3 x12, lut4 x20, lut8 x3".
std::string auto_summary(const AutoQuantResult& result);
// --quant, --quant-dot, --calib, --calib-method and --mmap (bench takes these without the rest of
// the run options).
void add_weight_options(CLI::App& app, RunOptions& options);
// A session on the model; while it quantizes the weights a progress bar
// ("quantize [###---] 40% ...") goes to stderr.
std::unique_ptr<Session> open_session(const Model& model, SessionOptions options);
const char* kernels_isa();
// "1 thread", "2 threads".
std::string thread_count(size_t n);

}  // namespace anelm::cli
