// anelm synth: a random-weight Hugging Face folder with the shapes of a known model.
#include <fmt/core.h>

#include <chrono>
#include <filesystem>
#include <memory>

#include "base/error.h"
#include "base/format_count.h"
#include "command.h"
#include "flag_checks.h"
#include "models/models.h"
#include "synth/synth.h"

namespace anelm::cli {
namespace {

struct SynthArgs {
    std::string preset;
    std::string out;
    std::string dtype = "bf16";
    uint64_t seed = 0;
    int threads = 0;
    bool force = false;
    bool list = false;
};

void print_presets() {
    fmt::print("{:<14} {:<7} {:>7} {:>7} {:>6} {:>8} {:>9}  {}\n", "preset", "arch", "params",
               "n_layer", "n_embd", "n_vocab", "bf16 size", "shapes of");
    for (const std::string& name : synth_presets()) {
        const SynthPreset p = synth_preset(name);
        const int64_t n = synth_param_count(p);
        fmt::print("{:<14} {:<7} {:>7} {:>7} {:>6} {:>8} {:>5.2f} GiB  {}\n", p.name,
                   arch_name(p.spec.arch), format_count(n), p.spec.n_layer, p.spec.n_embd,
                   p.spec.n_vocab, 2.0 * static_cast<double>(n) / (1 << 30), p.model);
    }
}

int run_synth(const SynthArgs& args) {
    if (args.list) {
        print_presets();
        return 0;
    }
    if (args.preset.empty()) fail("synth: give a PRESET (anelm synth --list shows them)");
    if (args.out.empty()) fail("synth: give the output folder with -o DIR");
    SynthOptions options;
    options.dtype = *dtype_from_name(args.dtype);
    options.seed = args.seed;
    options.force = args.force;
    options.n_threads = args.threads;
    const SynthPreset preset = synth_preset(args.preset);

    const auto start = std::chrono::steady_clock::now();
    synth_write(preset, args.out, options);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto bytes =
        std::filesystem::file_size(std::filesystem::path(args.out) / "model.safetensors");
    fmt::print(stderr, "{}: {} ({} parameters, {}) written to {} in {:.2f} s ({:.2f} GB/s)\n",
               preset.name, preset.model, synth_param_count(preset), args.dtype, args.out, secs,
               static_cast<double>(bytes) / secs / 1e9);
    return 0;
}

std::function<int()> setup(CLI::App& app) {
    auto args = std::make_shared<SynthArgs>();
    app.add_option("preset", args->preset, "preset name (see --list)");
    app.add_option("-o,--out", args->out, "output folder");
    app.add_option("--dtype", args->dtype, "weight type")
        ->check(CLI::IsMember({"bf16", "f16", "f32"}))
        ->capture_default_str();
    app.add_option("--seed", args->seed, "random seed")->capture_default_str();
    add_threads_option(app, args->threads);
    app.add_flag("--force", args->force, "replace an existing output folder anelm wrote");
    app.add_flag("--list", args->list, "list the presets");
    return [args] { return run_synth(*args); };
}

const bool registered = register_command(
    {"synth", "Write a random-weight Hugging Face folder with the shapes of a known model", setup});

}  // namespace
}  // namespace anelm::cli
