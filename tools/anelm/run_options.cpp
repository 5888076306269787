#include "run_options.h"

#include "exec/cpu/kernels/kernels.h"

namespace anelm::cli {

SessionOptions RunOptions::session() const {
    SessionOptions s;
    s.threads = threads;
    s.n_ctx = n_ctx;
    s.precision = precision_from_name(precision_name);
    s.quant = quant::parse_quant_spec(quant);
    return s;
}

std::unique_ptr<Session> open_session(const Model& model, SessionOptions options) {
    ProgressBar bar("quantize");
    options.quant_progress = bar.callback();
    auto session = std::make_unique<Session>(model.spec(), model.weights(), options);
    bar.finish();
    return session;
}

void add_run_options(CLI::App& app, RunOptions& options) {
    app.add_option("-t,--threads", options.threads, "threads (default: physical cores)");
    app.add_option("--ctx", options.n_ctx, "context length (KV cache size)")->capture_default_str();
    app.add_option("--precision", options.precision_name,
                   "f32 or f16 activations, or ane (the Neural Engine's half storage emulated)")
        ->check(CLI::IsMember({"f32", "f16", "ane"}))
        ->capture_default_str();
    add_quant_option(app, options);
}

void add_quant_option(CLI::App& app, RunOptions& options) {
    app.add_option("--quant", options.quant,
                   "quantize the weights at load: a preset (lut4, lut6, lut8, int8, int4) and/or "
                   "embed=|ffn=|head= none, BITS, BITS:GROUP, int8, int4 (docs/quantization.md)")
        ->capture_default_str();
}

void add_sampler_options(CLI::App& app, SamplerParams& p) {
    app.add_option("--temp", p.temp, "temperature (0: greedy)")->capture_default_str();
    app.add_option("--top-k", p.top_k, "keep the k most likely tokens (0: off)")
        ->capture_default_str();
    app.add_option("--top-p", p.top_p, "nucleus sampling mass (1: off)")->capture_default_str();
    app.add_option("--min-p", p.min_p, "drop tokens below min-p × the top probability (0: off)")
        ->capture_default_str();
    app.add_option("--repeat-penalty", p.repeat_penalty, "penalty on recent tokens (1: off)")
        ->capture_default_str();
    app.add_option("--seed", p.seed, "random seed")->capture_default_str();
}

const char* kernels_isa() {
    return kernels::active_isa();
}

}  // namespace anelm::cli
