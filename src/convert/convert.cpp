#include "convert/convert.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "anemll/convert_readme.h"
#include "anemll/meta_yaml.h"
#include "anemll/per_layer_table.h"
#include "anemll/tokenizer_files.h"
#include "base/atomic_file.h"
#include "base/error.h"
#include "base/output_check.h"
#include "io/gguf.h"
#include "io/model_format.h"
#include "lower/ane_lowering.h"
#include "lower/program_parts.h"
#include "passes/fp16_scale.h"
#include "quant/quant_error.h"
#include "quant/quant_spec.h"
#include "quant/quantize_program.h"
#include "quant/quantized_matrix.h"
#include "runtime/runtime_program.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/llama2c_export.h"

namespace anelm {

namespace fs = std::filesystem;

namespace {

// The source's file or folder name: what packages and meta.yaml record of it,
// never where it was on the converting machine.
std::string source_name(const std::string& path) {
    fs::path p = fs::absolute(path).lexically_normal();
    if (!p.has_filename()) p = p.parent_path();
    return p.filename().string();
}

// Bytes a weight occupies in a package: its codes and tables, or fp16.
uint64_t stored_bytes(const ir::Weight& w) {
    if (w.quantized) return static_cast<uint64_t>(w.quantized->storage_bytes());
    return static_cast<uint64_t>(w.view.numel()) * 2;
}

uint64_t weight_bytes(const ir::Program& program, const ir::Function& fn,
                      const std::vector<ir::ValueId>& nodes) {
    std::set<ir::WeightId> seen;
    uint64_t total = 0;
    for (ir::ValueId id : nodes) {
        const ir::Node& node = fn.nodes[static_cast<size_t>(id)];
        for (ir::WeightId w : {node.weight, node.bias})
            if (w != ir::no_weight && seen.insert(w).second)
                total += stored_bytes(program.weights[static_cast<size_t>(w)]);
    }
    return total;
}

// The folder beside `out` that everything is written into first.
class TempDir {
public:
    explicit TempDir(const fs::path& out) : path_(partial_path(out)) {
        std::error_code ec;
        fs::remove_all(path_, ec);
        fs::create_directories(path_, ec);
        if (ec) fail("{}: cannot create: {}", path_.string(), ec.message());
    }
    ~TempDir() {
        if (done_) return;
        std::error_code ignored;
        fs::remove_all(path_, ignored);
    }
    const fs::path& path() const { return path_; }
    void rename_to(const fs::path& out, bool replace) {
        move_folder_into_place(path_, out, replace);
        done_ = true;
    }

private:
    fs::path path_;
    bool done_ = false;
};

// The tokenizers that may be a llama2.c checkpoint's, beside it: tokenizer.bin
// or tokNNN.bin, comma-separated. Only named: which one is its own is the
// user's to say.
std::string llama2c_tokenizers_beside(const fs::path& checkpoint) {
    std::vector<std::string> found;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::absolute(checkpoint).parent_path(), ec)) {
        const std::string name = e.path().filename().string();
        if (name.ends_with(".bin") && name.starts_with("tok")) found.push_back(e.path().string());
    }
    std::ranges::sort(found);
    std::string text;
    for (const std::string& f : found) text += (text.empty() ? "" : ", ") + f;
    return text;
}

std::string join(const std::vector<int64_t>& v) {
    std::string s;
    for (int64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
    return s;
}

}  // namespace

quant::QuantChoice parse_lut_option(const std::string& option, const std::string& text) {
    if (text.empty()) return {};
    const quant::QuantChoice c = quant::parse_quant_choice(text, option);
    if (c.method != quant::QuantMethod::lut && c.method != quant::QuantMethod::none)
        fail("{}: {} has no ANEMLL name, expected none, BITS, BITS,GROUP or BITS:GROUP", option,
             text);
    return c;
}

quant::QuantSpec package_quant_spec(const ModelSpec& spec, const ConvertOptions& options) {
    quant::QuantSpec q;
    q.embed = parse_lut_option("--lut-embed", options.lut_embed);
    q.ffn = parse_lut_option("--lut-ffn", options.lut_ffn);
    q.head = anemll::default_layout(arch_name(spec.arch), spec.n_vocab,
                                    parse_lut_option("--lut-head", options.lut_head))
                 .lut_head;
    q.run_blocks = false;  // the ANE has no block formats
    q.per_weight = options.quant_recipe;
    return q;
}

anemll::ConvertLayout lower_converted(const Model& model, const ConvertOptions& options,
                                      ThreadPool& pool, const StageFn& stage,
                                      const ConvertedPackageFn& each,
                                      std::vector<WeightReport>* weights) {
    const ModelSpec& spec = model.spec();
    auto report = [&](const std::string& name) { return stage ? stage(name) : ProgressFn{}; };

    anemll::ConvertLayout layout = anemll::default_layout(
        arch_name(spec.arch), spec.n_vocab, parse_lut_option("--lut-head", options.lut_head));
    if (!options.prefix.empty()) layout.prefix = options.prefix;
    layout.context_length = options.ctx;
    layout.batch_size = std::min(options.batch, options.ctx);
    layout.lut_embed = parse_lut_option("--lut-embed", options.lut_embed);
    layout.lut_ffn = parse_lut_option("--lut-ffn", options.lut_ffn);
    layout.argmax_in_model = options.argmax;
    layout.monolithic = options.monolithic;
    layout.fp16_scale = options.fp16_scale;
    layout.verify_tokens = options.verify;
    if (spec.sliding_window > 0) {
        layout.sliding_window = spec.sliding_window;
        layout.single_cache = true;  // one cache; sliding layers mask what they do not see
    }

    if (spec.per_layer_dim > 0 && options.per_layer_table != "package") {
        if (options.per_layer_table != "8" && options.per_layer_table != "16")
            fail("--per-layer-table: {}, expected 8, 16 or package", options.per_layer_table);
        layout.per_layer_bits = options.per_layer_table == "8" ? 8 : 16;
    }
    if (options.chunks > spec.n_layer)
        fail("--chunks: {} chunks for {} layers", options.chunks, spec.n_layer);
    if (!anemll::valid_verify_tokens(options.verify, options.ctx))
        fail("--verify: {} tokens, expected 2 to the context of {}", options.verify, options.ctx);

    // The program: one-token decode, lowered into both functions of each chunk.
    ProgramOptions po;
    po.n_ctx = options.ctx;
    po.functions = {{"decode", 1, false}};
    ir::Program program = runtime_program(spec, model.weights(), po);
    passes::scale_residual(program, options.fp16_scale);
    quant::quantize_program(program, package_quant_spec(spec, options), pool, report("quantize"), 0,
                            options.calibration.get());

    const ir::Function& fn = program.function("decode");
    if (weights) *weights = weight_reports(program, fn, pool);
    const lower::ProgramParts parts = lower::split_parts(fn);
    const auto n_layer = static_cast<int64_t>(parts.layers.size());
    if (options.monolithic) {
        if (options.chunks > 1)
            fail("--monolithic: the model is one file, not {} chunks", options.chunks);
        layout.n_chunks = 1;
    } else if (options.chunks > 0) {
        layout.n_chunks = options.chunks;
    } else {
        std::vector<uint64_t> per_layer;
        for (const auto& layer : parts.layers)
            per_layer.push_back(weight_bytes(program, fn, layer));
        layout.n_chunks =
            anemll::auto_chunk_count(per_layer, 0, weight_bytes(program, fn, parts.final_norm),
                                     static_cast<uint64_t>(options.max_chunk_mb * 1024 * 1024));
    }
    layout.check(options.out.empty() ? model.path : options.out);

    lower::AneOptions ane;
    ane.batch = layout.batch_size;
    ane.argmax = options.argmax;
    ane.rotate = layout.rotates();
    ane.verify = layout.verify_tokens;
    ane.per_layer_rows_input = layout.per_layer_bits > 0;
    ane.description =
        fmt::format("{} converted by anelm for the Apple Neural Engine", source_name(model.path));
    ane.metadata = {{"com.anemll.info", "Converted with anelm"},
                    {"com.anemll.context_length", std::to_string(layout.context_length)},
                    {"com.anemll.num_chunks", std::to_string(layout.n_chunks)},
                    {"com.anemll.batch_size", std::to_string(layout.batch_size)},
                    {"com.anemll.vocab_size", std::to_string(layout.vocab_size)},
                    {"com.anemll.lm_head_chunk_sizes", join(layout.lm_head_chunk_sizes)}};
    if (options.argmax) ane.metadata["com.anemll.argmax_in_model"] = "true";

    const auto ranges = anemll::layer_ranges(n_layer, layout.n_chunks);
    const int64_t n_steps = options.monolithic ? 1 : static_cast<int64_t>(ranges.size()) + 2;
    const ProgressFn progress = report("lower");
    int64_t step = 0;
    auto emit = [&](const lower::AnePackage& package, const std::string& stem) {
        each(package, stem);
        if (progress) progress(++step, n_steps);
    };
    auto with = [&](std::initializer_list<std::pair<const char*, std::string>> extra) {
        lower::AneOptions o = ane;
        for (const auto& [k, v] : extra) o.metadata[k] = v;
        return o;
    };
    auto lut_bits = [](const quant::QuantChoice& c) { return std::to_string(c.nbits); };
    std::string functions;
    for (const std::string& name : layout.function_names())
        functions += (functions.empty() ? "" : ",") + name;
    if (options.monolithic) {
        emit(lower::lower_monolithic(program, layout.lm_head_chunk_sizes,
                                     with({{"com.anemll.lut_bits", lut_bits(layout.lut_ffn)},
                                           {"com.anemll.functions", functions}})),
             layout.monolithic_stem());
        return layout;
    }
    emit(lower::lower_embeddings(program,
                                 with({{"com.anemll.lut_bits", lut_bits(layout.lut_embed)}})),
         layout.embeddings_stem());
    for (size_t c = 0; c < ranges.size(); ++c)
        emit(lower::lower_chunk(program, ranges[c].begin, ranges[c].end,
                                with({{"com.anemll.chunk_no", std::to_string(c + 1)},
                                      {"com.anemll.lut_bits", lut_bits(layout.lut_ffn)},
                                      {"com.anemll.functions", functions}})),
             layout.ffn_chunk_stem(static_cast<int>(c + 1)));
    emit(lower::lower_lm_head(program, layout.lm_head_chunk_sizes,
                              with({{"com.anemll.lut_bits", lut_bits(layout.lut_head)}})),
         layout.lm_head_stem());
    return layout;
}

void check_convert_request(const std::string& model_path, const ConvertOptions& options) {
    const fs::path out = folder_path(options.out);
    if (options.out.empty()) fail("convert: no output folder given (-o)");
    // First, so that an output a killed run set aside is back before the check.
    clean_up_after_killed_runs(out);
    check_output_folder(out, options.force, {model_path, options.tokenizer_path});
    const ModelFormat format = detect_model_format(model_path);
    if (format == ModelFormat::hf_folder) {
        anemll::check_tokenizer_source(model_path);
    } else if (format == ModelFormat::llama2c && options.tokenizer_path.empty()) {
        const std::string beside = llama2c_tokenizers_beside(model_path);
        fail(
            "{}: a llama2.c checkpoint holds no tokenizer and `anelm generate` needs one in the "
            "output: pass its tokenizer.bin with --tokenizer{}",
            model_path, beside.empty() ? "" : " (beside it: " + beside + ")");
    }
}

ConvertResult convert_model(const Model& model, const ConvertOptions& options, ThreadPool& pool,
                            const StageFn& stage) {
    check_convert_request(model.path, options);
    const fs::path out = folder_path(options.out);
    TempDir tmp(out);
    ConvertResult result;
    result.layout = lower_converted(
        model, options, pool, stage,
        [&](const lower::AnePackage& package, const std::string& stem) {
            const std::string name = anemll::package_name(stem);
            lower::write_ane_package(package, tmp.path() / name);
            result.files.push_back(name);
            for (anemll::CarriedInput& c : lower::carried_inputs(package)) {
                c.package = name;
                result.carried.push_back(std::move(c));
            }
        },
        &result.weights);
    if (result.layout.per_layer_bits > 0) {
        const std::string file = result.layout.per_layer_table_file();
        anemll::write_per_layer_table((tmp.path() / file).string(),
                                      model.weights().get("model.embed_tokens_per_layer.weight"),
                                      result.layout.per_layer_bits, model.spec().per_layer_dim,
                                      stage ? stage("per-layer table") : ProgressFn{});
        result.files.push_back(file);
        // The report's line for the table: what the file holds, not the embeddings.
        for (WeightReport& r : result.weights)
            if (r.name == "model.embed_tokens_per_layer.weight") {
                r.written = result.layout.per_layer_bits == 16 ? "f16 file" : "int8 file";
                const anemll::PerLayerTable table((tmp.path() / file).string());
                r.error = quant::stand_in_error(
                    model.weights().get(r.name), pool, [&](int64_t o, float* out) {
                        const auto id = static_cast<int32_t>(o);
                        table.lookup(std::span(&id, 1),
                                     std::span(out, static_cast<size_t>(table.cols())));
                    });
            }
    }

    anemll::MetaYaml meta = anemll::make_meta_yaml(result.layout, source_name(model.path));
    if (const fs::path gen = fs::path(model.path) / "generation_config.json"; fs::exists(gen))
        meta.sampling = anemll::read_recommended_sampling(gen.string());
    meta.model_path = source_name(model.path);
    meta.n_ctx_train = model.spec().n_ctx_train;
    meta.quant_recipe = options.quant_recipe;
    meta.command_line = options.command_line;
    anemll::write_meta_yaml((tmp.path() / "meta.yaml").string(), meta);
    result.files.push_back("meta.yaml");
    std::vector<std::string> tokenizer_files;
    if (fs::is_directory(model.path)) {
        tokenizer_files = anemll::copy_tokenizer_files(model.path, tmp.path().string());
    } else if (is_gguf_file(model.path)) {
        // Its tokenizer.* metadata in Hugging Face's form, where anelm and
        // ANEMLL's runners look for a tokenizer.
        tokenizer_files = write_gguf_tokenizer_files(GgufFile(model.path), tmp.path().string());
    } else if (!options.tokenizer_path.empty()) {
        // A llama2.c checkpoint: its tokenizer travels with the packages as
        // tokenizer.bin, where anelm generate looks for it, and in Hugging
        // Face's form for ANEMLL's runners.
        const fs::path tok(options.tokenizer_path);
        std::error_code ec;
        fs::copy_file(tok, tmp.path() / "tokenizer.bin", ec);
        if (ec) fail("{}: cannot copy: {}", tok.string(), ec.message());
        tokenizer_files =
            write_llama2c_hf_files(tok.string(), tmp.path().string(), result.layout.context_length);
        tokenizer_files.push_back("tokenizer.bin");
    }
    result.files.insert(result.files.end(), tokenizer_files.begin(), tokenizer_files.end());
    write_file_atomic(
        (tmp.path() / "README.txt").string(),
        anemll::convert_readme_text(meta, tokenizer_files, options.out, result.carried));
    result.files.push_back("README.txt");
    write_output_list(tmp.path());
    // Again: the output may have changed during a long conversion.
    check_output_folder(out, options.force);
    tmp.rename_to(out, true);
    return result;
}

}  // namespace anelm
