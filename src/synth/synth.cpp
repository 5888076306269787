#include "synth/synth.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/output_check.h"
#include "base/thread_pool.h"
#include "io/safetensors_writer.h"
#include "models/expected_tensors.h"
#include "models/model_family.h"
#include "synth/hf_json.h"
#include "synth/random_fill.h"

namespace anelm {

namespace fs = std::filesystem;

namespace {

// HF's initialisation: normal(0, 0.02) matrices, RMSNorm weights of one (zero for
// Gemma, whose norms scale by 1 + weight). Biases
// draw from the same normal rather than HF's zeros, so a forward pass that drops
// a bias gives a different answer.
constexpr float init_std = 0.02f;

// input_layernorm, post_attention_layernorm, q_norm, k_norm and the final norm.
bool is_norm(const std::string& name) {
    return name.ends_with("norm.weight");
}

// Gains stored as offsets from one (Gemma's, most of Qwen3.5's) start at zero.
float norm_init(Arch arch, const std::string& name) {
    const ModelFamily& family = *model_family(arch);
    return family.offset_norm && family.offset_norm(name) ? 0.0f : 1.0f;
}

// Gemma 4's per-layer output scalar: not one, so a forward pass that skips it
// gives a different answer.
constexpr float layer_scalar_init = 0.75f;

void write_text(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    out.close();
    if (!out) fail("{}: cannot write", path.string());
}

void write_weights(const SynthPreset& preset, const fs::path& path, const SynthOptions& options) {
    std::vector<TensorSpec> specs;
    for (auto& t : expected_tensors(preset.spec))
        specs.push_back({std::move(t.name), options.dtype, std::move(t.shape)});
    ThreadPool pool(options.n_threads > 0 ? options.n_threads : ThreadPool::physical_cores());
    write_safetensors(path.string(), specs,
                      [&](size_t i, std::span<std::byte> out) {
                          if (specs[i].name.ends_with("layer_scalar")) {
                              synth::fill_constant(out, options.dtype, layer_scalar_init);
                          } else if (is_norm(specs[i].name)) {
                              synth::fill_constant(out, options.dtype,
                                                   norm_init(preset.spec.arch, specs[i].name));
                          } else {
                              synth::fill_normal(out, options.dtype, init_std, options.seed,
                                                 specs[i].name, pool);
                          }
                      },
                      {{"format", "pt"}});
}

void write_folder(const SynthPreset& preset, const fs::path& dir, const SynthOptions& options) {
    write_text(dir / "config.json", synth::config_json(preset, options.dtype));
    write_text(dir / "generation_config.json", synth::generation_config_json(preset));
    write_text(dir / "tokenizer.json", synth::tokenizer_json(preset));
    write_text(dir / "tokenizer_config.json", synth::tokenizer_config_json(preset));
    write_weights(preset, dir / "model.safetensors", options);
}

}  // namespace

int64_t synth_param_count(const SynthPreset& preset) {
    int64_t n = 0;
    for (const auto& t : expected_tensors(preset.spec)) {
        int64_t numel = 1;
        for (int64_t d : t.shape) numel *= d;
        n += numel;
    }
    return n;
}

void synth_write(const SynthPreset& preset, const std::string& dir, const SynthOptions& options) {
    synth::check_preset(preset);
    const fs::path target = folder_path(dir);
    if (target.filename().empty()) fail("{}: not a folder name", dir);
    std::error_code ec;
    // First, so that an output a killed run set aside is back before the check.
    clean_up_after_killed_runs(target);
    check_output_folder(target, options.force);

    // Built beside the target, so the final rename stays on one file system.
    const fs::path tmp = partial_path(target);
    fs::remove_all(tmp, ec);
    if (!fs::create_directories(tmp, ec) || ec)
        fail("{}: cannot create: {}", tmp.string(), ec.message());
    try {
        write_folder(preset, tmp, options);
        write_output_list(tmp);
        move_folder_into_place(tmp, target, true);
    } catch (const fs::filesystem_error& e) {
        fs::remove_all(tmp, ec);
        fail("{}: {}", dir, e.code().message());
    } catch (...) {
        fs::remove_all(tmp, ec);
        throw;
    }
}

void synth_write(const std::string& preset, const std::string& dir, DType dtype, uint64_t seed) {
    SynthOptions options;
    options.dtype = dtype;
    options.seed = seed;
    synth_write(synth_preset(preset), dir, options);
}

}  // namespace anelm
