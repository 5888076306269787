// anelm info: what a model is, in one screen or as JSON.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <map>
#include <nlohmann/json.hpp>

#include "base/format_count.h"
#include "command.h"
#include "coreml_info.h"
#include "exec/cpu/kv_cache.h"
#include "io/ggml_types.h"
#include "io/model_format.h"
#include "models/gguf_model.h"
#include "models/model_loader.h"
#include "models/models.h"

namespace anelm::cli {
namespace {

struct InfoArgs {
    std::string model;
    bool json = false;
};

// Parameters and bytes per stored type.
struct WeightSummary {
    int64_t n_params = 0;
    std::map<std::string, int64_t> type_params;
    uint64_t bytes = 0;
    size_t n_tensors = 0;
};

WeightSummary summarize(const WeightStore& weights) {
    WeightSummary w;
    for (const std::string& name : weights.names()) {
        const TensorView& t = weights.get(name);
        w.n_params += t.numel();
        w.type_params[std::string(dtype_name(t.dtype))] += t.numel();
    }
    w.bytes = weights.total_bytes();
    w.n_tensors = weights.size();
    return w;
}

// A GGUF file's tensors as stored (block types by ggml's names), without
// reading or dequantizing them.
WeightSummary summarize(const GgufFile& gguf) {
    WeightSummary w;
    for (const GgufTensor& t : gguf.tensors()) {
        const int64_t n = TensorView{DType::f32, t.shape, nullptr}.numel();
        w.n_params += n;
        w.type_params[ggml_type_name(t.type)] += n;
        w.bytes += t.n_bytes;
    }
    w.n_tensors = gguf.tensors().size();
    return w;
}

// Gemma 4: the layer kinds (upper case where a layer reads another's K/V),
// their heads and rope, which layers lend K/V, the per-layer embeddings.
// Gemma 4's layer kinds: a global head size, KV shared between layers or
// per-layer embeddings (what plan's shape maths test too).
bool has_gemma4_layers(const ModelSpec& s) {
    return s.global_head_dim > 0 || s.n_kv_shared_layers > 0 || s.per_layer_dim > 0;
}

void print_gemma4_layers(const ModelSpec& s) {
    std::string kinds;
    for (int64_t il = 0; il < s.n_layer; ++il) {
        const char kind = s.sliding_layers[static_cast<size_t>(il)] ? 's' : 'f';
        kinds += kv_source_layer(s, il) == il ? kind : static_cast<char>(kind - 'a' + 'A');
    }
    const auto turning =
        static_cast<int64_t>(s.rope_global_fraction * double(s.global_head_dim) / 2);
    fmt::print(
        "layers         {} (s: sliding window {}, heads of {}; f: full, heads of {}, {} of {} "
        "frequencies turn; upper case: reads K/V of the last s / f layer before them)\n",
        kinds, s.sliding_window, s.head_dim, s.global_head_dim, turning, s.global_head_dim / 2);
    if (s.per_layer_dim > 0)
        fmt::print("per-layer      {} per layer, table of {} rows{}\n", s.per_layer_dim,
                   s.per_layer_vocab,
                   s.double_wide_mlp ? "; sharing layers' MLPs twice as wide" : "");
}

int run_info(const InfoArgs& args) {
    const ModelFormat format = detect_model_format(args.model);
    if (format == ModelFormat::coreml_package) return run_coreml_info(args.model, args.json);
    if (format == ModelFormat::converted_folder) return run_converted_info(args.model, args.json);
    ModelSpec s;
    WeightSummary w;
    if (format == ModelFormat::gguf) {
        const GgufFile gguf(args.model);
        s = gguf_model_spec(gguf);
        w = summarize(gguf);
    } else {
        const LoadedModel m = load_model(args.model);
        s = m.spec;
        w = summarize(m.weights);
    }
    if (args.json) {
        nlohmann::ordered_json j;
        j["path"] = args.model;
        j["architecture"] = arch_name(s.arch);
        j["n_params"] = w.n_params;
        j["weight_bytes"] = w.bytes;
        j["dtypes"] = w.type_params;
        j["n_ctx_train"] = s.n_ctx_train;
        j["n_vocab"] = s.n_vocab;
        j["n_embd"] = s.n_embd;
        j["n_layer"] = s.n_layer;
        j["n_head"] = s.n_head;
        j["n_head_kv"] = s.n_head_kv;
        j["head_dim"] = s.head_dim;
        j["n_ff"] = s.n_ff;
        j["rope_theta"] = s.rope_theta;
        j["rms_norm_eps"] = s.rms_norm_eps;
        j["tie_word_embeddings"] = s.tie_word_embeddings;
        j["attention_bias"] = s.attention_bias;
        j["qk_norm"] = s.qk_norm;
        j["eos_token_ids"] = s.eos_token_ids;
        if (!s.conv_layers.empty()) {
            j["conv_layers"] = s.conv_layers;
            j["conv_kernel"] = s.conv_kernel;
        }
        if (!s.delta_layers.empty()) {
            j["delta_layers"] = s.delta_layers;
            j["delta_heads"] = {s.delta_n_head_k, s.delta_n_head_v};
            j["delta_head_dims"] = {s.delta_head_dim_k, s.delta_head_dim_v};
            j["conv_kernel"] = s.conv_kernel;
            j["rope_dims"] = s.rope_dims;
        }
        if (has_gemma4_layers(s)) {
            j["sliding_layers"] = s.sliding_layers;
            j["sliding_window"] = s.sliding_window;
            j["global_head_dim"] = s.global_head_dim;
            j["rope_global_fraction"] = s.rope_global_fraction;
            j["n_kv_shared_layers"] = s.n_kv_shared_layers;
            j["per_layer_dim"] = s.per_layer_dim;
        }
        j["kv_bytes_per_position"] = 2 * kv_values_per_position(s);
        j["kv_bytes_per_position_q8"] = kv_bytes_per_position(s, KvType::q8);
        j["kv_bytes_per_position_k16v8"] = kv_bytes_per_position(s, KvType::k16v8);
        j["n_tensors"] = w.n_tensors;
        fmt::print("{}\n", j.dump(2));
        return 0;
    }
    fmt::print("model          {}\n", args.model);
    fmt::print("architecture   {}\n", arch_name(s.arch));
    fmt::print("parameters     {} ({})\n", w.n_params, format_count(w.n_params));
    fmt::print("weights        {:.1f} MiB in {} tensors\n", w.bytes / 1048576.0, w.n_tensors);
    for (const auto& [dtype, count] : w.type_params)
        fmt::print("  {:<12} {} parameters\n", dtype, count);
    fmt::print("context        {}\n", s.n_ctx_train);
    fmt::print("vocabulary     {}\n", s.n_vocab);
    fmt::print("n_embd {}  n_layer {}  n_head {}  n_head_kv {}  head_dim {}  n_ff {}\n", s.n_embd,
               s.n_layer, s.n_head, s.n_head_kv, s.head_dim, s.n_ff);
    fmt::print(
        "rope_theta {}  rms_norm_eps {}  tied embeddings {}  attention bias {}  qk norm {}\n",
        s.rope_theta, s.rms_norm_eps, s.tie_word_embeddings, s.attention_bias, s.qk_norm);
    if (!s.conv_layers.empty()) {
        std::string kinds;
        for (bool conv : s.conv_layers) kinds += conv ? 'c' : 'a';
        fmt::print("layers         {} (c: short convolution of {} taps, a: attention)\n", kinds,
                   s.conv_kernel);
    }
    if (!s.delta_layers.empty()) {
        std::string kinds;
        for (bool delta : s.delta_layers) kinds += delta ? 'd' : 'a';
        fmt::print(
            "layers         {} (d: Gated DeltaNet, {} key / {} value heads of {} / {}; a: "
            "gated attention, {} of {} dims rotated)\n",
            kinds, s.delta_n_head_k, s.delta_n_head_v, s.delta_head_dim_k, s.delta_head_dim_v,
            s.rope_dims, s.head_dim);
    }
    if (has_gemma4_layers(s)) print_gemma4_layers(s);
    const auto kib = [&](KvType t) {
        return static_cast<double>(kv_bytes_per_position(s, t)) / 1024.0;
    };
    fmt::print(
        "kv cache       {:.1f} KiB per position (f16 K and V of the layers that compute them; "
        "--kv q8 {:.1f}, k16v8 {:.1f})\n",
        kib(KvType::f16), kib(KvType::q8), kib(KvType::k16v8));
    fmt::print("eos ids        [{}]\n", fmt::join(s.eos_token_ids, ", "));
    return 0;
}

std::function<int()> setup(CLI::App& app) {
    auto args = std::make_shared<InfoArgs>();
    app.add_option(
           "model", args->model,
           "Hugging Face folder, GGUF file, llama2.c .bin, .mlpackage or a converted folder")
        ->required();
    app.add_flag("--json", args->json, "print JSON");
    return [args] { return run_info(*args); };
}

const bool registered = register_command({"info", "Describe a model", setup});

}  // namespace
}  // namespace anelm::cli
