// anelm doctor: where a model's values leave FP16's range, what that does to a
// half-precision run, and the residual scale that fixes it.
#include <fmt/core.h>

#include "analysis/doctor.h"
#include "analysis/doctor_report.h"
#include "base/atomic_file.h"
#include "base/error.h"
#include "base/output_check.h"
#include "command.h"
#include "flag_checks.h"
#include "runtime/model.h"

namespace anelm::cli {
namespace {

struct DoctorArgs {
    std::string model;
    std::string tokenizer;
    std::string prompts_file;
    int64_t n_tokens = 128;
    bool json = false;
    std::string report;
    double target = 32768;
    std::string precision = "ane";
    int threads = 0;
};

int run_doctor_command(const DoctorArgs& args) {
    if (!(args.target > 0 && args.target <= 65504))
        fail("--target must be in (0, 65504], got {}", args.target);
    // Before the calibration, which takes minutes.
    if (!args.report.empty())
        check_output_file(args.report, {args.model, args.tokenizer, args.prompts_file});
    Model model = open_model(args.model, args.tokenizer, true);
    const std::vector<DoctorPrompt> prompts =
        calibration_prompts(model, args.model, args.prompts_file, args.n_tokens);

    DoctorOptions options;
    options.target = args.target;
    options.device = precision_from_name(args.precision);
    options.threads = args.threads;
    DoctorReport report;
    {
        ProgressBar bar("doctor");
        report = run_doctor(model.spec(), model.weights(), prompts, options, bar.callback());
    }
    report.model = args.model;

    if (!args.report.empty()) write_file_atomic(args.report, doctor_html(report));
    if (args.json) {
        fmt::print("{}\n", doctor_json(report).dump(2));
    } else {
        fmt::print("{}", doctor_text(report));
        if (!args.report.empty()) fmt::print("report         {}\n", args.report);
    }
    return 0;
}

std::function<int()> setup(CLI::App& app) {
    auto args = std::make_shared<DoctorArgs>();
    app.add_option("model", args->model, "Hugging Face folder, GGUF file or llama2.c .bin")
        ->required();
    app.add_option("--tokenizer", args->tokenizer,
                   "tokenizer.json, a GGUF file or llama2.c tokenizer.bin");
    app.add_option("--prompts", args->prompts_file,
                   "calibration prompts: a JSON array of strings, or one prompt per line "
                   "(default: built-in chat, code, repetition and multilingual texts)");
    in_range(app.add_option("-n", args->n_tokens, "tokens per prompt at most"), {1, 1 << 20})
        ->capture_default_str();
    app.add_flag("--json", args->json, "print the findings as JSON (docs/doctor.md)");
    app.add_option("--report", args->report, "write an HTML report with per-layer charts");
    app.add_option("--target", args->target, "the residual peak alpha aims for")
        ->capture_default_str();
    app.add_option("--precision", args->precision, "the device precision to check: f16 or ane")
        ->check(CLI::IsMember({"f16", "ane"}))
        ->capture_default_str();
    add_threads_option(app, args->threads);
    return [args] { return run_doctor_command(*args); };
}

const bool registered = register_command(
    {"doctor", "Find FP16 overflow in a model and the residual scale that fixes it", setup});

}  // namespace
}  // namespace anelm::cli
