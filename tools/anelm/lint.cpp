// anelm lint: the Neural Engine's rules checked on a converted folder, a
// .mlpackage, or what anelm convert would make of a model.
#include <fmt/core.h>

#include <filesystem>
#include <memory>
#include <optional>

#include "analysis/lint.h"
#include "analysis/lint_report.h"
#include "analysis/trained_context.h"
#include "anemll/converted_files.h"
#include "base/progress.h"
#include "base/thread_pool.h"
#include "command.h"
#include "convert/convert.h"
#include "converted/ane_pipeline.h"
#include "coreml/package.h"
#include "coreml_info.h"
#include "flag_checks.h"

namespace anelm::cli {
namespace {

namespace fs = std::filesystem;

struct LintArgs {
    std::string path, tokenizer, target = "macos15";
    bool json = false;
    int chunks = 0;
    int threads = 0;
    ConvertOptions convert;
};

uint64_t weight_file_bytes(const coreml::Package& pkg) {
    const fs::path file = pkg.model_path().parent_path() / "weights" / "weight.bin";
    std::error_code ec;
    const uintmax_t n = fs::file_size(file, ec);
    return ec ? 0 : static_cast<uint64_t>(n);
}

void add_findings(const std::vector<LintFinding>& findings, LintReport& report) {
    report.findings.insert(report.findings.end(), findings.begin(), findings.end());
}

void add_package(const LintPackage& p, LintReport& report) {
    const auto findings = lint_package(p, report.target);
    report.memory.push_back(lint_package_memory(p));
    const auto memory = lint_package_memory_check(report.memory.back(), report.target);
    report.packages.push_back(p.name);
    add_findings(findings, report);
    add_findings(memory, report);
}

void lint_file(const std::string& path, int chunk_no, int n_chunks, LintReport& report) {
    const coreml::Package pkg{fs::path(path)};
    add_package({fs::path(path).filename().string(), &pkg.model(), &pkg, weight_file_bytes(pkg),
                 chunk_no, n_chunks},
                report);
}

void lint_converted_dir(const std::string& dir, LintReport& report) {
    const anemll::ConvertedFiles files =
        anemll::find_converted_files((fs::path(dir) / "meta.yaml").string());
    add_findings(
        lint_trained_context(files.meta.layout.context_length, files.meta.n_ctx_train, "meta.yaml"),
        report);
    if (!files.monolithic.empty()) return lint_file(files.monolithic, 0, 0, report);
    lint_file(files.embeddings, 0, 0, report);
    const int n = static_cast<int>(files.chunks.size());
    for (int c = 0; c < n; ++c) lint_file(files.chunks[static_cast<size_t>(c)], c + 1, n, report);
    lint_file(files.lm_head, 0, 0, report);
}

// What convert would write, lowered in memory and checked package by package.
void lint_model(const LintArgs& args, LintReport& report) {
    const Model model = open_model(args.path, args.tokenizer, false);
    ConvertOptions o = args.convert;
    add_findings(lint_trained_context(o.ctx, model.spec().n_ctx_train, args.path), report);
    o.chunks = args.chunks;
    ThreadPool pool(args.threads > 0 ? args.threads : ThreadPool::physical_cores());
    std::optional<ProgressBar> bar;  // on stderr, as convert draws it
    const StageFn stage = [&](const std::string& name) -> ProgressFn {
        if (bar) bar->finish();
        bar.emplace(name);
        return bar->callback();
    };
    lower_converted(
        model, o, pool, stage, [&](const lower::AnePackage& pkg, const std::string& stem) {
            add_package(
                {anemll::package_name(stem), &pkg.model, &pkg.blobs(), pkg.blobs().file_bytes()},
                report);
        });
    if (bar) bar->finish();
}

int run_lint(const LintArgs& args) {
    LintReport report{args.path, parse_lint_target(args.target), {}, {}, {}};
    if (is_coreml_package(args.path))
        lint_file(args.path, 0, 0, report);
    else if (is_converted_dir(args.path))
        lint_converted_dir(args.path, report);
    else
        lint_model(args, report);
    // The packages together, as a runner loads them all (ANE017).
    add_findings(lint_total_memory_check(report.memory, report.target, args.path), report);
    if (args.json)
        fmt::print("{}\n", lint_json(report).dump(2));
    else
        fmt::print("{}", lint_text(report));
    return lint_exit_code(report.findings);
}

std::function<int()> setup(CLI::App& app) {
    auto args = std::make_shared<LintArgs>();
    ConvertOptions& o = args->convert;
    app.add_option("path", args->path,
                   "converted folder (meta.yaml), .mlpackage, or a Hugging Face folder / GGUF / "
                   "llama2.c .bin to lint as anelm convert would write it")
        ->required();
    app.add_flag("--json", args->json, "print the findings as JSON (docs/lint.md)");
    app.add_option("--target", args->target, "macos15 or ios18: the per-file size limit")
        ->capture_default_str();
    app.add_option("--tokenizer", args->tokenizer, "a llama2.c checkpoint's tokenizer.bin");
    in_range(app.add_option("--ctx", o.ctx, "as anelm convert: context length"), {1, 1 << 20})
        ->capture_default_str();
    in_range(app.add_option("--batch", o.batch, "as anelm convert: tokens per prefill call"),
             {1, 1 << 20})
        ->capture_default_str();
    in_range(
        app.add_option("--chunks", args->chunks, "as anelm convert: transformer chunks (0: auto)"),
        {0, 1024})
        ->capture_default_str();
    app.add_option("--lut-embed", o.lut_embed, "as anelm convert")->capture_default_str();
    app.add_option("--lut-ffn", o.lut_ffn, "as anelm convert")->capture_default_str();
    app.add_option("--lut-head", o.lut_head, "as anelm convert")->capture_default_str();
    app.add_flag("--argmax", o.argmax, "as anelm convert: argmax in the LM head");
    app.add_flag("--monolithic", o.monolithic, "as anelm convert: one package");
    add_threads_option(app, args->threads);
    return [args] { return run_lint(*args); };
}

const bool registered = register_command(
    {"lint",
     "Check Core ML packages (or what convert would write) against the Neural Engine's rules; "
     "exit 0 clean, 1 errors, 3 warnings only",
     setup});

}  // namespace
}  // namespace anelm::cli
