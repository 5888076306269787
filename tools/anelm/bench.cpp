// anelm bench: prompt processing and generation speed, like llama-bench.
#include <fmt/core.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "base/error.h"
#include "base/format_count.h"
#include "bench_speculative.h"
#include "command.h"
#include "converted/ane_pipeline.h"
#include "exec/cpu/kv_cache.h"
#include "flag_checks.h"
#include "run_options.h"
#include "runtime/model.h"
#include "runtime/session.h"

namespace anelm::cli {
namespace {

// The table's model column: the folder or file name, as llama-bench names its model.
std::string model_label(const std::string& path) {
    std::filesystem::path p(path);
    if (p.filename().empty()) p = p.parent_path();
    return p.filename().string().substr(0, 30);
}

struct BenchArgs {
    std::string model, tokenizer, spec_prompt_file;
    int64_t n_prompt = 512;
    int64_t n_gen = 128;
    // Tokens in the context before each test, as llama-bench's -d: each
    // depth is its own set of tests.
    std::vector<int64_t> depths = {0};
    int repetitions = 3;
    bool json = false;
    RunOptions run;
    SpeculativeOptions speculative;
};

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("{}: cannot read the prompt file", path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct MeanSd {
    double mean = 0, sd = 0;
};

// Zeros for a test that did not run.
MeanSd mean_sd(const std::vector<double>& v) {
    MeanSd r;
    if (v.empty()) return r;
    for (double x : v) r.mean += x;
    r.mean /= static_cast<double>(v.size());
    for (double x : v) r.sd += (x - r.mean) * (x - r.mean);
    r.sd = v.size() > 1 ? std::sqrt(r.sd / static_cast<double>(v.size() - 1)) : 0;
    return r;
}

// One row of llama-bench's table; params of 0 print as unknown.
void print_row(const std::string& model, int64_t n_params, double bytes, int threads,
               const std::string& test, const MeanSd& m) {
    const std::string params = n_params > 0 ? format_count(n_params) : "-";
    fmt::print("| {:<30} | {:>10} | {:>6.2f} GiB | {:>7} | {:>8} | {:>11.2f} ± {:>6.2f} |\n",
               model_label(model), params, bytes / 1073741824.0, threads, test, m.mean, m.sd);
}

struct Speeds {
    std::vector<double> pp, tg;  // tokens per second of each repetition
};

// The header of llama-bench's table.
void print_header() {
    fmt::print("| {:<30} | {:>10} | {:>10} | {:>7} | {:>8} | {:>20} |\n", "model", "params", "size",
               "threads", "test", "t/s");
    fmt::print("| {:-<30} | {:->10} | {:->10} | {:->7} | {:->8} | {:->20} |\n", "", "", "", "", "",
               "");
}

// A depth's rows of llama-bench's table.
void print_rows(const BenchArgs& args, int64_t n_params, double bytes, int threads, int64_t depth,
                const Speeds& s) {
    const std::string at = depth > 0 ? fmt::format(" @ d{}", depth) : "";
    if (!s.pp.empty())
        print_row(args.model, n_params, bytes, threads, fmt::format("pp{}{}", args.n_prompt, at),
                  mean_sd(s.pp));
    if (!s.tg.empty())
        print_row(args.model, n_params, bytes, threads, fmt::format("tg{}{}", args.n_gen, at),
                  mean_sd(s.tg));
}

// The JSON fields every bench prints: the speeds and how they were taken;
// with the weight bytes a decode step reads, the rate it read them at.
void add_speeds(nlohmann::ordered_json& j, const BenchArgs& args, int64_t depth, const Speeds& s,
                double bytes_per_token) {
    const MeanSd p = mean_sd(s.pp), g = mean_sd(s.tg);
    if (bytes_per_token > 0) j["tg_gb_s"] = g.mean * bytes_per_token / 1e9;
    j["pp_tok_s"] = p.mean;
    j["pp_tok_s_sd"] = p.sd;
    j["tg_tok_s"] = g.mean;
    j["tg_tok_s_sd"] = g.sd;
    j["n_prompt"] = args.n_prompt;
    j["n_gen"] = args.n_gen;
    j["n_depth"] = depth;
    j["repetitions"] = args.repetitions;
    j["isa"] = kernels_isa();
}

// As JSON: for one depth one object, for several an array of one per depth,
// each `fields` and that depth's speeds.
void print_json(const BenchArgs& args, const nlohmann::ordered_json& fields,
                const std::vector<Speeds>& speeds, double bytes_per_token) {
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (size_t k = 0; k < speeds.size(); ++k) {
        nlohmann::ordered_json j = fields;
        add_speeds(j, args, args.depths[k], speeds[k], bytes_per_token);
        all.push_back(std::move(j));
    }
    fmt::print("{}\n", (all.size() == 1 ? all[0] : all).dump(2));
}

// llama-bench's table, each depth's rows in the order given.
void print_table(const BenchArgs& args, int64_t n_params, double bytes, int threads,
                 const std::vector<Speeds>& speeds) {
    print_header();
    for (size_t k = 0; k < speeds.size(); ++k)
        print_rows(args, n_params, bytes, threads, args.depths[k], speeds[k]);
}

// Random ids, as llama-bench uses: the speed does not depend on them.
std::vector<int32_t> random_prompt(int64_t n, int64_t n_vocab, uint32_t seed = 42) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(n_vocab - 1));
    std::vector<int32_t> prompt(static_cast<size_t>(n));
    for (int32_t& id : prompt) id = pick(rng);
    return prompt;
}

// Brings a model to a context of the first d tokens of one fixed sequence,
// prefilling only what it lacks: after the tests at one depth it rewinds to
// that depth (where the model can) and fills on to the next.
class DepthFill {
public:
    DepthFill(TokenModel& m, std::function<void()> reset, std::vector<int32_t> tokens)
        : m_(m), reset_(std::move(reset)), tokens_(std::move(tokens)) {}

    void to(int64_t depth) {
        int64_t keep = std::min(held_, depth);
        if (keep > 0 && m_.can_rewind(keep)) {
            m_.rewind(keep);
        } else {
            reset_();
            keep = 0;
        }
        if (depth > keep)
            m_.prefill(std::span<const int32_t>(tokens_).subspan(static_cast<size_t>(keep),
                                                                 static_cast<size_t>(depth - keep)));
        held_ = depth;
    }

private:
    TokenModel& m_;
    std::function<void()> reset_;
    std::vector<int32_t> tokens_;
    int64_t held_ = 0;  // fill tokens the model holds, before what the tests fed
};

// Prompt and generation speed of any token model at one depth: the prompt
// prefilled, then n_gen tokens decoded, each test from a context of `depth`
// fill tokens (untimed), `repetitions` times each after a warm-up pass.
Speeds measure(TokenModel& m, DepthFill& fill, int64_t depth, const std::vector<int32_t>& prompt,
               int64_t n_gen, int repetitions) {
    auto timed = [&](const std::function<void()>& pass) {
        fill.to(depth);
        return seconds_of(pass);
    };
    auto prompt_pass = [&] { m.prefill(prompt); };
    auto gen_pass = [&] {
        int32_t id = prompt.empty() ? 0 : prompt[0];
        for (int64_t i = 0; i < n_gen; ++i) m.decode(id);
    };
    Speeds s;
    if (!prompt.empty()) {
        timed(prompt_pass);  // warm up: page in the weights
        for (int r = 0; r < repetitions; ++r)
            s.pp.push_back(static_cast<double>(prompt.size()) / timed(prompt_pass));
    }
    if (n_gen > 0) {
        if (s.pp.empty()) timed(gen_pass);
        for (int r = 0; r < repetitions; ++r) s.tg.push_back(n_gen / timed(gen_pass));
    }
    return s;
}

// Every depth's speeds, in the order given.
std::vector<Speeds> measure_depths(TokenModel& m, const std::function<void()>& reset,
                                   const BenchArgs& args, int64_t n_vocab) {
    const int64_t deepest = std::ranges::max(args.depths);
    DepthFill fill(m, reset, random_prompt(deepest, n_vocab, 7));
    const std::vector<int32_t> prompt = random_prompt(args.n_prompt, n_vocab);
    std::vector<Speeds> speeds;
    for (const int64_t depth : args.depths)
        speeds.push_back(measure(m, fill, depth, prompt, args.n_gen, args.repetitions));
    return speeds;
}

// A converted folder on the MIL interpreter, run as generate runs it: the
// prompt through prefill batches, generation through infer.
int run_bench_converted(const BenchArgs& args) {
    if (args.speculative.active()) fail("{}: bench drafts only for a source model", args.model);
    ThreadPool pool(args.run.threads > 0 ? args.run.threads : ThreadPool::physical_cores());
    ConvertedModel converted(args.model, args.tokenizer,
                             converted_rounding(args.run.precision_name), &pool,
                             converted_quant_dot(args.run.quant_dot));
    AnePipeline& pipeline = converted.pipeline();
    const int64_t deepest = std::ranges::max(args.depths);
    if (deepest + args.n_prompt > pipeline.n_ctx() || deepest + args.n_gen > pipeline.n_ctx())
        fail("{}: -d {} with -p {} and with -n {} must each fit the packages' context of {}",
             args.model, deepest, args.n_prompt, args.n_gen, pipeline.n_ctx());
    const std::vector<Speeds> speeds =
        measure_depths(pipeline, [&] { pipeline.reset(); }, args, converted.vocab_size());
    double bytes = 0;  // the folder: packages, tokenizer and metadata
    for (const auto& f : std::filesystem::recursive_directory_iterator(args.model))
        if (f.is_regular_file()) bytes += static_cast<double>(f.file_size());
    if (args.json) {
        nlohmann::ordered_json j;
        j["model"] = args.model;
        j["engine"] = "mil";
        j["bytes"] = bytes;
        j["threads"] = pool.size();
        j["precision"] = args.run.precision_name;
        print_json(args, j, speeds, 0);
        return 0;
    }
    print_table(args, 0, bytes, pool.size(), speeds);
    fmt::print("Core ML packages on the MIL interpreter ({}, precision {})\n", kernels_isa(),
               args.run.precision_name);
    return 0;
}

int run_bench(const BenchArgs& args) {
    if (is_converted_dir(args.model)) return run_bench_converted(args);
    const bool speculative = args.speculative.active();
    Model model = open_model(args.model, args.tokenizer, speculative);
    SessionOptions so = args.run.session(model);
    const int64_t deepest = std::ranges::max(args.depths);
    so.n_ctx = deepest + std::max<int64_t>(args.n_prompt, args.n_gen) + 1;
    if (const int64_t need = deepest + std::max<int64_t>(args.n_prompt, args.n_gen);
        model.spec().context_within(need) < need)
        fail("{}: -d {} with -p {} and with -n {} must each fit the model's trained context of {}",
             args.model, deepest, args.n_prompt, args.n_gen, model.spec().n_ctx_train);
    // The prompt in one batch, as llama-bench's; the depth in batches at
    // least as large as a prompt's usual ones, not token by token.
    so.prefill_batch = std::max<int64_t>(args.n_prompt, SessionOptions{}.prefill_batch);
    SpeculativeBench spec_bench;
    std::unique_ptr<DraftSource> draft;
    if (speculative) {
        spec_bench.prompt = args.spec_prompt_file.empty() ? default_speculative_prompt()
                                                          : read_text(args.spec_prompt_file);
        spec_bench.n_gen = args.n_gen;
        spec_bench.repetitions = args.repetitions;
        const auto prompt_tokens =
            static_cast<int64_t>(model.tokenizer->encode(spec_bench.prompt, true).size());
        so.verify_tokens = args.speculative.max_draft_n() + 1;
        so.n_ctx = std::max(so.n_ctx, prompt_tokens + args.n_gen + so.verify_tokens);
        draft = std::make_unique<DraftSource>(args.speculative, model, so);
    }
    const std::unique_ptr<Session> owned = open_session(model, so);
    Session& session = *owned;

    const std::vector<Speeds> speeds =
        measure_depths(session, [&] { session.reset(); }, args, model.spec().n_vocab);

    int64_t n_params = 0;
    for (const std::string& name : model.weights().names())
        n_params += model.weights().get(name).numel();
    const size_t weight_bytes = model.weights().total_bytes();
    const double bytes_per_token = static_cast<double>(session.decode_weight_bytes());

    if (args.json) {
        nlohmann::ordered_json j;
        j["model"] = args.model;
        j["n_params"] = n_params;
        j["weight_bytes"] = weight_bytes;
        j["threads"] = session.threads();
        j["quant"] = so.quant.to_string();
        j["kv"] = args.run.kv;
        print_json(args, j, speeds, bytes_per_token);
        return 0;
    }
    print_table(args, n_params, static_cast<double>(weight_bytes), session.threads(), speeds);
    // At depth a step reads the cache too: on average the depth and half the
    // tokens generated (sliding-window layers read less: not counted then).
    const bool whole_cache = model.spec().sliding_window == 0;
    const auto kv_position = static_cast<double>(kv_bytes_per_position(model.spec(), so.kv));
    for (size_t k = 0; k < speeds.size(); ++k) {
        if (speeds[k].tg.empty()) continue;
        const double tok_s = mean_sd(speeds[k].tg).mean;
        const int64_t depth = args.depths[k];
        if (depth == 0 || !whole_cache) {
            fmt::print("generation{} reads {:.1f} MB of weights per token: {:.2f} GB/s ({}, quant "
                       "{}, kv {})\n",
                       depth > 0 ? fmt::format(" at depth {}", depth) : "", bytes_per_token / 1e6,
                       tok_s * bytes_per_token / 1e9, kernels_isa(), so.quant.to_string(),
                       args.run.kv);
            continue;
        }
        const double kv = kv_position * (static_cast<double>(depth) + args.n_gen / 2.0);
        fmt::print("generation at depth {} reads {:.1f} MB of weights and {:.1f} MB of KV cache "
                   "per token: {:.2f} GB/s ({}, quant {}, kv {})\n",
                   depth, bytes_per_token / 1e6, kv / 1e6, tok_s * (bytes_per_token + kv) / 1e9,
                   kernels_isa(), so.quant.to_string(), args.run.kv);
    }
    if (draft != nullptr) bench_speculative(session, model, *draft, args.speculative, spec_bench);
    return 0;
}

std::function<int()> setup(CLI::App& app) {
    auto args = std::make_shared<BenchArgs>();
    app.add_option("model", args->model,
                   "Hugging Face folder, GGUF file, llama2.c .bin, or a folder anelm convert wrote")
        ->required();
    in_range(app.add_option("-p,--n-prompt", args->n_prompt, "prompt tokens"), {0, 1 << 20})
        ->capture_default_str();
    in_range(app.add_option("-n,--n-gen", args->n_gen, "generated tokens"), {0, 1 << 20})
        ->capture_default_str();
    in_range(app.add_option("-d,--n-depth", args->depths,
                            "tokens already in the context when each test starts (llama-bench's "
                            "-d): decode and prompt speed at that depth; a list (0,4096,8192) "
                            "measures each, filling the context once up to the deepest")
                 ->delimiter(','),
             {0, 1 << 24})
        ->capture_default_str();
    in_range(app.add_option("-r,--repetitions", args->repetitions, "runs per test"), {1, 1000})
        ->capture_default_str();
    app.add_flag("--json", args->json, "print JSON");
    add_threads_option(app, args->run.threads);
    app.add_option("--precision", args->run.precision_name, "f32, f16 or ane (see generate)")
        ->check(CLI::IsMember({"f32", "f16", "ane"}));
    add_kv_option(app, args->run);
    add_weight_options(app, args->run);
    app.add_option("--tokenizer", args->tokenizer,
                   "tokenizer.json, a GGUF file or llama2.c tokenizer.bin (speculative bench)");
    add_speculative_options(app, args->speculative, true);
    app.add_option("--spec-prompt-file", args->spec_prompt_file,
                   "the text the speculative bench continues (default: code to be edited)");
    return [args] { return run_bench(*args); };
}

const bool registered = register_command({"bench", "Measure prompt and generation speed", setup});

}  // namespace
}  // namespace anelm::cli
