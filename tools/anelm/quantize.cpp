// anelm quantize: quantize every linear weight of a model as a spec says and
// report how far each lands from the original. Writes no model.
#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/output_check.h"
#include "base/thread_pool.h"
#include "command.h"
#include "flag_checks.h"
#include "models/expected_tensors.h"
#include "models/model_loader.h"
#include "run_options.h"
#include "runtime/model.h"
#include "quant/coreai_config.h"
#include "quant/quant_error.h"
#include "quant/quantize.h"

namespace anelm::cli {
namespace {

struct QuantizeArgs {
    std::string model, tokenizer, spec = "lut4";
    std::string coreai_config, coreai_platform = "ios";
    CalibOptions calib;
    int64_t n_ctx = 512;
    int threads = 0;
    uint64_t seed = 0;
    bool json = false;
};

// One linear weight and what the spec does with it.
struct Job {
    std::string name;
    std::string weight;        // the stored tensor it reads
    std::string program_name;  // the weight's name in a program: a tied head is "<weight>:head"
    const TensorView* view;
    quant::Component component;
    quant::QuantChoice choice;
};

struct Result {
    quant::QuantError error;
    double seconds = 0;
    int64_t bytes_in = 0, bytes_out = 0;
};

// The linear weights in model order; a tied LM head is the embedding matrix
// quantized as `head`.
std::vector<Job> linear_jobs(const LoadedModel& m, const quant::QuantSpec& spec) {
    std::vector<Job> jobs;
    const auto add = [&](std::string name, const std::string& weight, quant::Component c) {
        const TensorView& view = m.weights.get(weight);
        // A tied head is its own weight in a program ("<name>:head").
        std::string program_name = name == weight ? weight : weight + ":head";
        const quant::QuantChoice choice = spec.choice_for_weight(c, program_name, view.numel());
        jobs.push_back({std::move(name), weight, std::move(program_name), &view, c, choice});
    };
    for (const ExpectedTensor& t : expected_tensors(m.spec)) {
        const std::optional<quant::Component> c = quant::tensor_component(t.name);
        if (c && t.shape.size() == 2) add(t.name, t.name, *c);
    }
    if (m.spec.tie_word_embeddings)
        add("lm_head.weight (tied)", "model.embed_tokens.weight", quant::Component::head);
    return jobs;
}

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", shape[i]);
    return s + "]";
}

std::string clock_text(double seconds) {
    const auto s = static_cast<int64_t>(seconds + 0.5);
    return fmt::format("{}:{:02}", s / 60, s % 60);
}

// A one-line bar on stderr when it is a terminal: tensor i of n, ETA by weights done.
class Progress {
public:
    explicit Progress(int64_t total_weights)
        : total_(total_weights), enabled_(isatty(STDERR_FILENO)) {}

    void show(size_t i, size_t n, const std::string& name, int64_t weights_done, double elapsed) {
        if (!enabled_) return;
        constexpr int width = 24;
        const double frac =
            total_ > 0 ? static_cast<double>(weights_done) / static_cast<double>(total_) : 1.0;
        const int filled = static_cast<int>(frac * width);
        const std::string eta = weights_done > 0 ? clock_text(elapsed / frac - elapsed) : "?";
        fmt::print(stderr, "\r[{}{}] {}/{} ETA {} {:<50.50}",
                   std::string(static_cast<size_t>(filled), '#'),
                   std::string(static_cast<size_t>(width - filled), '.'), i + 1, n, eta, name);
        std::fflush(stderr);
    }
    void done() {
        if (enabled_) fmt::print(stderr, "\r{:<100}\r", "");
    }

private:
    int64_t total_;
    bool enabled_;
};

// Code, table and scale bits per weight over every job (16 for those left f16).
double bits_per_weight(const std::vector<Job>& jobs) {
    double bits = 0, weights = 0;
    for (const Job& job : jobs) {
        const int64_t n_out = job.view->shape[0], n_in = job.view->numel() / n_out;
        bits += quant::stored_bits(job.choice, n_out, n_in);
        weights += static_cast<double>(job.view->numel());
    }
    return weights > 0 ? bits / weights : 0.0;
}

// The predicted KL of a job's choice in the auto search; negative without one.
double predicted_kl(const Job& job, const AutoQuantResult* chosen) {
    if (!chosen) return -1;
    for (const MatrixChoice& m : chosen->matrices)
        if (m.name == job.program_name && m.searched) return m.predicted_kl;
    return -1;
}

// "gptq on FILE (N tokens in windows of W; inputs f32)", or "none".
std::string calibration_text(const QuantizeArgs& args, const quant::ModelCalibration* calib) {
    if (!calib) return "none";
    return fmt::format("{} on {} ({} tokens in windows of {}; inputs {})",
                       quant::calib_method_name(calib->method), args.calib.path, calib->tokens,
                       args.n_ctx, calib->sequential ? "of the quantized layers" : "f32");
}

void print_table(const QuantizeArgs& args, const quant::QuantSpec& spec,
                 const quant::ModelCalibration* calib, const AutoQuantResult* chosen,
                 const std::vector<Job>& jobs, const std::vector<Result>& results, int threads,
                 double seconds) {
    fmt::print("model  {}\nspec   {} (tensors under {} elements stay f16), seed {}, {}\n",
               args.model, chosen ? args.spec : spec.to_string(), spec.min_elements, args.seed,
               thread_count(threads));
    fmt::print("calib  {}\n", calibration_text(args, calib));
    if (chosen) fmt::print("{}\n", auto_summary(*chosen));
    fmt::print("\n{:<48} {:<14} {:<8} {:>9} {:>9} {:>10} {:>9}{}\n", "tensor", "shape", "quant",
               "rel_rmse", "cosine", "max_abs", "ms", chosen ? "   kl_pred" : "");
    quant::QuantError total;
    int64_t n_quantized = 0, bytes_in = 0, bytes_out = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
        const Job& job = jobs[i];
        const Result& r = results[i];
        if (job.choice.method == quant::QuantMethod::none) {
            fmt::print("{:<48} {:<14} none\n", job.name, shape_text(job.view->shape));
            continue;
        }
        const double kl = predicted_kl(job, chosen);
        fmt::print("{:<48} {:<14} {:<8} {:>9.5f} {:>9.6f} {:>10.3g} {:>9.1f}{}\n", job.name,
                   shape_text(job.view->shape), job.choice.name(), r.error.rel_rmse(),
                   r.error.cosine(), r.error.max_abs, r.seconds * 1e3,
                   kl >= 0 ? fmt::format(" {:>9.5f}", kl) : "");
        total += r.error;
        ++n_quantized;
        bytes_in += r.bytes_in;
        bytes_out += r.bytes_out;
    }
    fmt::print(
        "\ntotal: {} of {} linear weights quantized, {:.1f} MiB -> {:.1f} MiB, {:.3f} bits per "
        "weight, rel_rmse {:.5f}, cosine {:.6f}, max_abs {:.3g}, {:.1f} s\n",
        n_quantized, jobs.size(), bytes_in / 1048576.0, bytes_out / 1048576.0,
        bits_per_weight(jobs), total.rel_rmse(), total.cosine(), total.max_abs, seconds);
}

void print_json(const QuantizeArgs& args, const quant::QuantSpec& spec,
                const quant::ModelCalibration* calib, const AutoQuantResult* chosen,
                const std::vector<Job>& jobs, const std::vector<Result>& results, int threads,
                double seconds) {
    nlohmann::ordered_json j;
    j["model"] = args.model;
    j["spec"] = chosen ? args.spec : spec.to_string();
    j["bits_per_weight"] = bits_per_weight(jobs);
    if (chosen) {
        j["auto"] = {{"predicted_kl", chosen->predicted_kl},
                     {"measured_kl", chosen->measured_kl},
                     {"kl_tokens", chosen->tokens},
                     {"seconds", chosen->seconds}};
    }
    if (calib) {
        j["calibration"] = {{"file", args.calib.path},
                            {"method", quant::calib_method_name(calib->method)},
                            {"tokens", calib->tokens},
                            {"inputs", calib->sequential ? "quantized" : "f32"},
                            {"window", args.n_ctx}};
    }
    j["min_elements"] = spec.min_elements;
    j["seed"] = args.seed;
    j["threads"] = threads;
    quant::QuantError total;
    int64_t n_quantized = 0, bytes_in = 0, bytes_out = 0;
    nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
    for (size_t i = 0; i < jobs.size(); ++i) {
        const Job& job = jobs[i];
        const Result& r = results[i];
        nlohmann::ordered_json t;
        t["name"] = job.name;
        t["component"] = quant::component_name(job.component);
        t["shape"] = job.view->shape;
        t["quant"] = job.choice.name();
        if (const double kl = predicted_kl(job, chosen); kl >= 0) t["predicted_kl"] = kl;
        if (job.choice.method != quant::QuantMethod::none) {
            t["rel_rmse"] = r.error.rel_rmse();
            t["cosine"] = r.error.cosine();
            t["max_abs"] = r.error.max_abs;
            t["seconds"] = r.seconds;
            t["bytes_in"] = r.bytes_in;
            t["bytes_out"] = r.bytes_out;
            total += r.error;
            ++n_quantized;
            bytes_in += r.bytes_in;
            bytes_out += r.bytes_out;
        }
        tensors.push_back(std::move(t));
    }
    j["tensors"] = std::move(tensors);
    j["total"] = {{"n_tensors", jobs.size()},     {"n_quantized", n_quantized},
                  {"bytes_in", bytes_in},         {"bytes_out", bytes_out},
                  {"rel_rmse", total.rel_rmse()}, {"cosine", total.cosine()},
                  {"max_abs", total.max_abs},     {"seconds", seconds}};
    fmt::print("{}\n", j.dump(2));
}

// Apple's coreai-opt config of the jobs' choices, for coreai.llm.export.
void write_coreai_config(const QuantizeArgs& args, const std::vector<Job>& jobs,
                         const AutoQuantResult* chosen) {
    std::vector<quant::RecipeWeight> weights;
    for (const Job& job : jobs) {
        if (job.component == quant::Component::embed || job.name != job.weight) continue;
        weights.push_back({job.name, job.choice, job.view->numel()});
    }
    // The mark lets the next run replace the file (check_output_file).
    std::vector<std::string> header = {
        std::string(report_mark),
        fmt::format("anelm quantize {} --quant {}: {:.3f} bits per weight", args.model, args.spec,
                    bits_per_weight(jobs))};
    if (chosen) header.push_back(auto_summary(*chosen));
    header.push_back("for: coreai.llm.export MODEL --platform " +
                     std::string(args.coreai_platform == "ios" ? "iOS" : "macOS") +
                     " --compression-config THIS_FILE");
    write_file_atomic(args.coreai_config,
                      quant::coreai_compression_yaml(
                          weights, quant::parse_coreai_platform(args.coreai_platform, "--coreai-platform"),
                          header));
}

int run_quantize(const QuantizeArgs& args) {
    if (!args.coreai_config.empty()) check_output_file(args.coreai_config, {args.model});
    const std::optional<AutoQuantTarget> target = parse_auto_target(args.spec);
    quant::QuantSpec spec = target ? quant::QuantSpec{} : quant::parse_quant_spec(args.spec);
    const Model model = open_model(args.model, args.tokenizer, !args.calib.path.empty());
    const LoadedModel& m = model.loaded;
    const int threads = args.threads > 0 ? args.threads : ThreadPool::physical_cores();
    const int64_t window = m.spec.context_within(args.n_ctx);
    if (target) check_auto_target(m.spec, m.weights, spec, *target);
    std::vector<std::vector<int32_t>> windows;
    auto calib =
        calibration_for(model, args.calib, window, threads, &windows, target ? nullptr : &spec);
    std::optional<AutoQuantResult> chosen;
    if (target) {
        chosen = search_widths(model, args.spec, spec, calib, windows, *target, threads);
        spec = chosen->spec;
    }
    const std::vector<Job> jobs = linear_jobs(m, spec);
    ThreadPool pool(threads);

    int64_t total_weights = 0, weights_done = 0;
    for (const Job& job : jobs) {
        if (job.choice.method != quant::QuantMethod::none) total_weights += job.view->numel();
    }
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    const auto since = [](Clock::time_point t) {
        return std::chrono::duration<double>(Clock::now() - t).count();
    };
    Progress progress(total_weights);
    quant::GramFactorCache factors;
    std::vector<Result> results(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) {
        const Job& job = jobs[i];
        if (job.choice.method == quant::QuantMethod::none) continue;
        progress.show(i, jobs.size(), job.name, weights_done, since(start));
        const auto t0 = Clock::now();
        quant::QuantizedMatrix q;
        try {
            const quant::Calibration for_job =
                calib ? calib->for_weight(job.weight, job.component,
                                          job.component != quant::Component::embed, &factors)
                      : quant::Calibration{};
            const auto made = calib ? calib->made_of(job.program_name, *job.view, job.choice,
                                                     args.seed, false)
                                    : nullptr;
            q = made ? *made
                     : quant::quantize_matrix(*job.view, job.choice, pool, args.seed, {}, for_job);
        } catch (const Error& e) {
            fail("{}: {}", job.name, e.what());
        }
        results[i].seconds = since(t0);
        results[i].error = quant::quant_error(*job.view, q, pool);
        results[i].bytes_in = static_cast<int64_t>(job.view->n_bytes());
        results[i].bytes_out = q.storage_bytes();
        weights_done += job.view->numel();
    }
    progress.done();
    const double seconds = since(start);
    if (args.json) {
        print_json(args, spec, calib.get(), chosen ? &*chosen : nullptr, jobs, results, threads,
                   seconds);
    } else {
        print_table(args, spec, calib.get(), chosen ? &*chosen : nullptr, jobs, results, threads,
                    seconds);
    }
    if (!args.coreai_config.empty())
        write_coreai_config(args, jobs, chosen ? &*chosen : nullptr);
    return 0;
}

std::function<int()> setup(CLI::App& app) {
    auto args = std::make_shared<QuantizeArgs>();
    app.add_option("model", args->model, "Hugging Face folder, GGUF file or llama2.c .bin")
        ->required();
    app.add_option("--quant", args->spec,
                   "what to quantize: a preset (lut4, lut6, lut8, int8, int4) and/or "
                   "embed=|ffn=|head= none, BITS, BITS:GROUP, BITS,GROUP, int8, int4; or "
                   "auto:bpw=BITS / auto:kl=KL with --calib (docs/quantization.md)")
        ->capture_default_str();
    app.add_option("--tokenizer", args->tokenizer,
                   "tokenizer.json, a GGUF file or llama2.c tokenizer.bin (for --calib)");
    add_calib_options(app, args->calib);
    in_range(app.add_option("--ctx", args->n_ctx,
                            "tokens per calibration window, at most the model's trained length"),
             {1, 1 << 24})
        ->capture_default_str();
    add_threads_option(app, args->threads);
    app.add_option("--seed", args->seed, "k-means seed")->capture_default_str();
    app.add_flag("--json", args->json, "print JSON");
    app.add_option("--coreai-config", args->coreai_config,
                   "also write the widths as Apple's coreai-opt compression config (YAML) for "
                   "coreai.llm.export --compression-config");
    app.add_option("--coreai-platform", args->coreai_platform,
                   "the config's platform: ios (LUT palettization, the Neural Engine's) or macos "
                   "(int4/int8)")
        ->check(CLI::IsMember({"ios", "macos"}))
        ->capture_default_str();
    return [args] { return run_quantize(*args); };
}

const bool registered = register_command(
    {"quantize", "Quantize the linear weights and report the error (writes no model)", setup});

}  // namespace
}  // namespace anelm::cli
