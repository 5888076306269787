#include "run_options.h"

#include <cmath>
#include <map>
#include <optional>

#include "analysis/doctor.h"
#include "base/error.h"
#include "flag_checks.h"
#include "kernels/kernels.h"
#include "runtime/calibration.h"

namespace anelm::cli {

float fp16_scale_option(const std::string& text, const Model& model, int threads) {
    if (text == "none") return 1.0f;
    if (text == "auto") {
        DoctorOptions options;
        options.threads = threads;
        const float alpha =
            measure_residual_scale(model.spec(), model.weights(),
                                   calibration_prompts(model, model.path, "", 128), options);
        fmt::print(stderr, "fp16 scale: {} (measured on the doctor's calibration prompts)\n",
                   alpha);
        return alpha;
    }
    size_t used = 0;
    float alpha = 0;
    try {
        alpha = std::stof(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    int exponent = 0;
    if (used != text.size() || !(alpha > 0) || std::frexp(alpha, &exponent) != 0.5f)
        fail("--fp16-scale: expected none, auto or a power of two such as 0.25, got '{}'", text);
    return alpha;
}

SessionOptions RunOptions::session(const Model& model) const {
    SessionOptions s;
    s.threads = threads;
    s.n_ctx = context_for(model.spec());
    if (model.spec().n_ctx_train > 0 && n_ctx > model.spec().n_ctx_train && ctx_flag &&
        ctx_flag->count() > 0)
        fmt::print(stderr, "--ctx {}: capped at {}, the model's trained length\n", n_ctx,
                   model.spec().n_ctx_train);
    s.precision = precision_from_name(precision_name);
    s.kv = kv_type_from_name(kv);
    const std::optional<AutoQuantTarget> target = parse_auto_target(quant);
    s.quant = target ? quant::QuantSpec{} : quant::parse_quant_spec(quant);
    s.fp16_scale = fp16_scale_option(fp16_scale, model, threads);
    s.mmap = mmap;
    if (target) check_auto_target(model.spec(), model.weights(), s.quant, *target);
    s.quant.int8_dot = quant_dot == "int8";
    std::vector<std::vector<int32_t>> windows;
    s.calibration =
        calibration_for(model, calib, s.n_ctx, threads, &windows, target ? nullptr : &s.quant);
    if (target) {
        const AutoQuantResult chosen =
            search_widths(model, quant, s.quant, s.calibration, windows, *target, threads);
        fmt::print(stderr, "{}\n", auto_summary(chosen));
        s.quant = chosen.spec;
    }
    return s;
}

int64_t RunOptions::context_for(const ModelSpec& spec) const {
    return spec.context_within(n_ctx);
}

std::string RunOptions::context_limit_reason(const ModelSpec& spec) const {
    return context_for(spec) < n_ctx ? "the model's trained length" : "raise --ctx";
}

std::unique_ptr<Session> open_session(const Model& model, SessionOptions options) {
    ProgressBar bar("quantize");
    options.quant_progress = bar.callback();
    auto session = std::make_unique<Session>(model.spec(), model.weights(), options);
    bar.finish();
    return session;
}

milexec::Rounding converted_rounding(const std::string& precision_name) {
    switch (precision_from_name(precision_name)) {
        case Precision::f32:
            return milexec::Rounding::none;
        case Precision::f16:
            return milexec::Rounding::f16;
        case Precision::ane:
            return milexec::Rounding::f16_flush;
    }
    return milexec::Rounding::f16;
}

milexec::QuantDot converted_quant_dot(const std::string& quant_dot) {
    return quant_dot == "int8" ? milexec::QuantDot::int8 : milexec::QuantDot::exact;
}

void add_run_options(CLI::App& app, RunOptions& options) {
    add_threads_option(app, options.threads);
    options.ctx_flag = in_range(app.add_option("--ctx", options.n_ctx,
                                               "context length (KV cache size), at most the "
                                               "model's trained length"),
                                {1, 1 << 24})
                           ->capture_default_str();
    app.add_option("--precision", options.precision_name,
                   "f32 or f16 activations, or ane (the Neural Engine's half storage emulated)")
        ->check(CLI::IsMember({"f32", "f16", "ane"}))
        ->capture_default_str();
    add_kv_option(app, options);
    add_weight_options(app, options);
    app.add_option("--fp16-scale", options.fp16_scale,
                   "scale the residual stream to keep half precision in range: none, auto "
                   "(measured as anelm doctor does) or a power of two (docs/doctor.md)")
        ->capture_default_str();
}

void add_kv_option(CLI::App& app, RunOptions& options) {
    app.add_option("--kv", options.kv,
                   "KV cache rows: f16, q8 (int8 keys and values, a scale and zero per head "
                   "and position) or k16v8 (f16 keys, int8 values); int8 halves the bytes decode "
                   "reads at depth (docs/quantization.md)")
        ->check(CLI::IsMember({"f16", "q8", "k16v8"}))
        ->capture_default_str();
}

void add_weight_options(CLI::App& app, RunOptions& options) {
    app.add_option("--quant", options.quant,
                   "quantize the weights at load: a preset (lut4, lut6, lut8, int8, int4) and/or "
                   "embed=|ffn=|head= none, BITS, BITS:GROUP, BITS,GROUP, int8, int4; or "
                   "auto:bpw=BITS / auto:kl=KL with --calib (docs/quantization.md)")
        ->capture_default_str();
    app.add_option("--quant-dot", options.quant_dot,
                   "how quantized weights (and a converted folder's palettized ones) are "
                   "multiplied: int8 (activations rounded to 8 bits per block of 128, summed "
                   "in integers where the processor can; faster) or exact (f32 activations "
                   "and tables)")
        ->check(CLI::IsMember({"int8", "exact"}))
        ->capture_default_str();
    add_calib_options(app, options.calib);
    app.add_flag("--mmap", options.mmap,
                 "read unquantized weights in place from the model file instead of copying them "
                 "to private memory at load (starts sooner and shares the page cache; generation "
                 "measured 10-20% slower)");
}

void add_calib_options(CLI::App& app, CalibOptions& options) {
    app.add_option("--calib", options.path,
                   "calibrate the LUT weights on this UTF-8 text (windows of --ctx tokens): "
                   "tables and codes chosen for the layer outputs on it, not the weights alone "
                   "(docs/quantization.md)")
        ->check(CLI::ExistingFile);
    app.add_option("--calib-method", options.method,
                   "gptq (codes chosen with error feedback over the full input statistics) or "
                   "weighted (k-means weighted by input energy)")
        ->check(CLI::IsMember({"gptq", "weighted"}))
        ->capture_default_str();
    app.add_option("--calib-inputs", options.inputs,
                   "each layer calibrated on the inputs the layers before it give once quantized "
                   "(quantized: GPTQ's order, one layer at a time) or as the f32 model's (f32)")
        ->check(CLI::IsMember({"quantized", "f32"}))
        ->capture_default_str();
    in_range(app.add_option("--calib-tokens", options.max_tokens,
                            "calibrate on the file's first N tokens (a few thousand measure "
                            "nearly as well as many more; docs/quantization.md)"),
             {1, 1e9})
        ->capture_default_str();
}

std::shared_ptr<const quant::ModelCalibration> calibration_for(
    const Model& model, const CalibOptions& options, int64_t window, int threads,
    std::vector<std::vector<int32_t>>* windows, const quant::QuantSpec* spec) {
    if (options.path.empty()) return nullptr;
    if (!model.tokenizer) fail("--calib: {} has no tokenizer; give --tokenizer", model.path);
    auto texts = calibration_windows(options.path, *model.tokenizer, window, options.max_tokens);
    ProgressBar bar("calibrate");
    auto stats = calibrate(model.spec(), model.weights(), texts,
                           quant::calib_method_from_name(options.method), threads, bar.callback(),
                           options.inputs == "quantized" ? spec : nullptr);
    bar.finish();
    if (windows) *windows = std::move(texts);
    return stats;
}

AutoQuantResult search_widths(const Model& model, const std::string& quant_text,
                              const quant::QuantSpec& base,
                              std::shared_ptr<const quant::ModelCalibration>& calibration,
                              const std::vector<std::vector<int32_t>>& windows,
                              const AutoQuantTarget& target, int threads) {
    if (!calibration)
        fail("--quant {}: give --calib FILE, the text the widths are chosen on", quant_text);
    ProgressBar bar("auto widths");
    AutoQuantResult r = choose_quantization(model.spec(), model.weights(), base, *calibration,
                                            windows, target, threads, bar.callback());
    bar.finish();
    auto with_made = std::make_shared<quant::ModelCalibration>(*calibration);
    with_made->made.insert(r.made.begin(), r.made.end());
    calibration = std::move(with_made);
    return r;
}

std::string auto_summary(const AutoQuantResult& result) {
    std::map<std::string, int> counts;
    for (const MatrixChoice& m : result.matrices)
        if (m.searched) ++counts[m.choice.method == quant::QuantMethod::none ? "f16" : m.choice.name()];
    std::string widths;
    for (const auto& [name, n] : counts)
        widths += fmt::format("{}{} x{}", widths.empty() ? "" : ", ", name, n);
    return fmt::format(
        "auto: {:.3f} bits per weight, KL predicted {:.4f}, measured {:.4f} ({} calibration "
        "tokens); {} ({:.1f} s)",
        result.bits_per_weight, result.predicted_kl, result.measured_kl, result.tokens, widths,
        result.seconds);
}

std::string thread_count(size_t n) {
    return fmt::format("{} {}", n, n == 1 ? "thread" : "threads");
}

const char* kernels_isa() {
    return kernels::active_isa();
}

}  // namespace anelm::cli
