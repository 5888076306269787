// `anelm convert`: a model into ANEMLL's directory of Core ML packages
// (embeddings, transformer chunks, LM head), meta.yaml, the tokenizer files and
// a README. Everything is written into a temporary folder beside the output
// and renamed into place at the end.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "anemll/anemll_layout.h"
#include "base/progress.h"
#include "base/thread_pool.h"
#include "convert/weight_report.h"
#include "lower/ane_lowering.h"
#include "quant/input_stats.h"
#include "runtime/model.h"

namespace anelm {

struct ConvertOptions {
    std::string out;
    std::string tokenizer_path;  // a llama2.c checkpoint's tokenizer.bin, copied into out
    int64_t ctx = 512;
    int64_t batch = 64;
    int chunks = 0;                  // 0: auto, the fewest that fit max_chunk_mb
    double max_chunk_mb = 950;       // MiB
    std::string lut_embed = "none";  // none, BITS, BITS,GROUP or BITS:GROUP
    std::string lut_ffn = "4,8";
    std::string lut_head = "6,8";
    bool argmax = false;
    float fp16_scale = 1;     // the residual stream scale (a power of two)
    std::string prefix;       // empty: ANEMLL's default for the architecture
    bool monolithic = false;  // one {prefix}_monolithic_full package instead of the split
    int64_t verify = 0;       // tokens of a verify function in every package; 0: none
    // Gemma 4's per-layer table: beside the packages at 8 or 16 bits, or
    // "package" (inside the embeddings).
    std::string per_layer_table = "8";
    // Input statistics that make the LUT weights data-aware (runtime/calibration.h); null: none.
    std::shared_ptr<const quant::ModelCalibration> calibration;
    // --quant auto's choice per matrix (weight name in the program), over the --lut-* ones.
    std::map<std::string, quant::QuantChoice> quant_recipe;
    bool force = false;        // replace an existing output anelm wrote
    std::string command_line;  // recorded in meta.yaml's comment block
};

// Reports a stage starting ("quantize", "chunk 2/4", ...) and then its progress.
using StageFn = std::function<ProgressFn(const std::string& stage)>;

struct ConvertResult {
    anemll::ConvertLayout layout;
    std::vector<std::string> files;             // what the output folder holds, in writing order
    std::vector<WeightReport> weights;          // each matrix against the values it was read as
    std::vector<anemll::CarriedInput> carried;  // the packages' carried state inputs
};

// "none", "4" (group 8), "4,8" (ANEMLL's --lut spelling) or "4:8" (--quant's): a LUT choice.
quant::QuantChoice parse_lut_option(const std::string& option, const std::string& text);

// How the packages' weights are quantized: the --lut-* choices (the head's as
// the layout defaults it for the model), --quant auto's recipe over them, and
// no block formats (the rest is written as f16).
quant::QuantSpec package_quant_spec(const ModelSpec& spec, const ConvertOptions& options);

// Builds and lowers what convert_model writes, without writing it: `each` gets
// every package with its file stem, in writing order, while the program it
// refers to is alive. Returns the layout (options.out only names errors).
using ConvertedPackageFn =
    std::function<void(const lower::AnePackage& package, const std::string& stem)>;
// With `weights`, the weights are reported there too.
anemll::ConvertLayout lower_converted(const Model& model, const ConvertOptions& options,
                                      ThreadPool& pool, const StageFn& stage,
                                      const ConvertedPackageFn& each,
                                      std::vector<WeightReport>* weights = nullptr);

// Throws Error when convert_model would refuse to write options.out for the
// model at `model_path`, so that a caller can ask before any long work: an
// output that is, lies inside or holds the model or the tokenizer, an existing
// output --force may not replace (base/output_check.h), or a model without the
// tokenizer `anelm generate OUT` needs.
void check_convert_request(const std::string& model_path, const ConvertOptions& options);

ConvertResult convert_model(const Model& model, const ConvertOptions& options, ThreadPool& pool,
                            const StageFn& stage = {});

}  // namespace anelm
