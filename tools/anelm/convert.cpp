// anelm convert: a model into ANEMLL's directory of Core ML packages.
#include <fmt/core.h>

#include <chrono>
#include <map>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "analysis/trained_context.h"
#include "base/error.h"
#include "base/thread_pool.h"
#include "command.h"
#include "convert/convert.h"
#include "flag_checks.h"
#include "run_options.h"

namespace anelm::cli {
namespace {

struct ConvertArgs {
    std::string model, tokenizer;
    std::string chunks = "auto";
    std::string fp16_scale = "none";
    int threads = 0;
    ConvertOptions options;
    CalibOptions calib;
    std::string quant;  // auto:bpw=B or auto:kl=K; empty: the --lut-* choices
};

// The --lut-* spelling ("4,8", "none") of the choice most matrices of a
// component took, which names the packages and meta.yaml's LUT keys.
std::string most_common(const AutoQuantResult& r, bool head) {
    std::map<std::string, int> counts;
    for (const MatrixChoice& m : r.matrices) {
        const bool is_head = m.name.ends_with(":head") || m.name == "lm_head.weight";
        if (!m.searched || is_head != head) continue;
        ++counts[m.choice.method == quant::QuantMethod::lut
                     ? fmt::format("{},{}", m.choice.nbits, m.choice.group_size)
                     : "none"];
    }
    std::string best = "none";
    int most = 0;
    for (const auto& [text, n] : counts)
        if (n > most) best = text, most = n;
    return best;
}

uint64_t folder_bytes(const std::filesystem::path& dir) {
    uint64_t total = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
        if (e.is_regular_file()) total += e.file_size();
    return total;
}

int run_convert(ConvertArgs& args, const std::string& command_line) {
    const auto start = std::chrono::steady_clock::now();
    ConvertOptions& o = args.options;
    if (args.chunks != "auto") {
        try {
            size_t used = 0;
            o.chunks = std::stoi(args.chunks, &used);
            if (used != args.chunks.size() || o.chunks < 1) throw std::invalid_argument("");
        } catch (const std::exception&) {
            fail("--chunks: expected a positive count or auto, got '{}'", args.chunks);
        }
    }
    const Model model = open_model(args.model, args.tokenizer, !args.calib.path.empty());
    // A warning, not a refusal: the context is the user's to choose, and lint reports it too
    // (ANE019), from the trained length convert records in meta.yaml.
    if (const std::string past = past_trained_context(o.ctx, model.spec().n_ctx_train);
        !past.empty())
        fmt::print(stderr, "anelm: warning: --ctx {}\n", past);
    o.tokenizer_path = args.tokenizer;
    // Before --fp16-scale auto's calibration and the conversion, which take minutes.
    check_convert_request(args.model, o);
    const std::optional<AutoQuantTarget> target = parse_auto_target(args.quant);
    if (!args.quant.empty() && !target)
        fail("--quant {}: convert takes auto:bpw=B or auto:kl=K; one LUT per component is "
             "--lut-embed, --lut-ffn and --lut-head",
             args.quant);
    quant::QuantSpec base;
    base.embed = parse_lut_option("--lut-embed", o.lut_embed);
    if (target) check_auto_target(model.spec(), model.weights(), base, *target);
    o.fp16_scale = fp16_scale_option(args.fp16_scale, model, args.threads);
    std::vector<std::vector<int32_t>> windows;
    const quant::QuantSpec packages = package_quant_spec(model.spec(), o);
    o.calibration = calibration_for(model, args.calib, model.spec().context_within(o.ctx),
                                    args.threads, &windows, target ? nullptr : &packages);
    if (target) {
        const AutoQuantResult chosen = search_widths(model, args.quant, base, o.calibration,
                                                     windows, *target, args.threads);
        fmt::print(stderr, "{}\n", auto_summary(chosen));
        o.quant_recipe = chosen.spec.per_weight;
        o.lut_ffn = most_common(chosen, false);
        o.lut_head = most_common(chosen, true);
    }
    o.command_line = command_line;
    ThreadPool pool(args.threads > 0 ? args.threads : ThreadPool::physical_cores());

    std::optional<ProgressBar> bar;
    const StageFn stage = [&](const std::string& name) -> ProgressFn {
        if (bar) bar->finish();
        bar.emplace(name);
        return bar->callback();
    };
    const ConvertResult result = convert_model(model, o, pool, stage);
    if (bar) bar->finish();

    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print("{}\n", weight_report_table(result.weights));
    const anemll::ConvertLayout& l = result.layout;
    fmt::print(
        "{}: {} chunks, context {}, batch {}, LUT embed/ffn/head {}/{}/{}, {} LM head "
        "pieces{}\n",
        o.out, l.n_chunks, l.context_length, l.batch_size, l.lut_embed.name(), l.lut_ffn.name(),
        l.lut_head.name(), l.split_lm_head, l.argmax_in_model ? " with argmax" : "");
    for (const std::string& f : result.files) fmt::print("  {}\n", f);
    fmt::print("{:.1f} MB in {:.1f} s\n", static_cast<double>(folder_bytes(o.out)) / 1e6, seconds);
    return 0;
}

std::function<int()> setup(CLI::App& app) {
    auto args = std::make_shared<ConvertArgs>();
    ConvertOptions& o = args->options;
    app.add_option("model", args->model, "Hugging Face folder, GGUF file or llama2.c .bin")
        ->required();
    app.add_option("-o,--out", o.out, "output folder (ANEMLL's layout)")->required();
    app.add_option("--tokenizer", args->tokenizer, "a llama2.c checkpoint's tokenizer.bin");
    in_range(app.add_option("--ctx", o.ctx, "context length (KV cache and causal mask width)"),
             {1, 1 << 20})
        ->capture_default_str();
    in_range(app.add_option("--batch", o.batch, "tokens per prefill call"), {1, 1 << 20})
        ->capture_default_str();
    app.add_option("--chunks", args->chunks,
                   "transformer chunks, or auto: the fewest whose largest fits --max-chunk-mb")
        ->capture_default_str();
    in_range(
        app.add_option("--max-chunk-mb", o.max_chunk_mb, "largest chunk for --chunks auto (MiB)"),
        {0.001, 1 << 20})
        ->capture_default_str();
    app.add_option("--lut-embed", o.lut_embed, "embeddings: none, BITS, BITS,GROUP or BITS:GROUP")
        ->capture_default_str();
    app.add_option("--lut-ffn", o.lut_ffn,
                   "transformer layers: none, BITS, BITS,GROUP or BITS:GROUP")
        ->capture_default_str();
    app.add_option("--lut-head", o.lut_head, "LM head: none, BITS, BITS,GROUP or BITS:GROUP")
        ->capture_default_str();
    add_calib_options(app, args->calib);
    app.add_option("--quant", args->quant,
                   "auto:bpw=BITS or auto:kl=KL (with --calib): the LUT width of every matrix "
                   "chosen by measured sensitivity, over --lut-ffn and --lut-head "
                   "(docs/quantization.md)");
    app.add_flag("--argmax", o.argmax, "the LM head returns each piece's argmax, not logits");
    app.add_option("--fp16-scale", args->fp16_scale,
                   "scale the residual stream to keep half precision in range: none, auto or a "
                   "power of two (docs/doctor.md)")
        ->capture_default_str();
    app.add_option("--prefix", o.prefix, "file name prefix (default: ANEMLL's for the model)");
    app.add_flag("--monolithic", o.monolithic,
                 "one {prefix}_monolithic_full package (ANEMLL's single-file form)");
    app.add_option("--verify", o.verify,
                   "add a verify function of N tokens to every package (speculative decoding: "
                   "generate OUT --lookup; 8 verifies 7 drafts)");
    app.add_option("--per-layer-table", o.per_layer_table,
                   "Gemma 4's per-layer embeddings: beside the packages at 8 or 16 bits, or "
                   "package (inside the embeddings)")
        ->capture_default_str();
    app.add_flag("--force", o.force, "replace an existing output folder anelm wrote");
    add_threads_option(app, args->threads);
    return [args] {
        const ConvertOptions& c = args->options;
        const std::string line = fmt::format(
            "anelm convert {} -o {} --ctx {} --batch {} --chunks {} --lut-embed {} --lut-ffn {} "
            "--lut-head {}{}{} --fp16-scale {}",
            args->model, c.out, c.ctx, c.batch, args->chunks, c.lut_embed, c.lut_ffn, c.lut_head,
            c.argmax ? " --argmax" : "", c.monolithic ? " --monolithic" : "", args->fp16_scale);
        return run_convert(*args, line);
    };
}

const bool registered = register_command(
    {"convert", "Convert a model into Core ML packages for the Neural Engine (ANEMLL's layout)",
     setup});

}  // namespace
}  // namespace anelm::cli
