// What calibration saw at the input of a linear layer: the second moments of
// its input rows, which data-aware palettization weighs the weights by.
// Linear layers that read the same value (q, k, v; gate, up) share one.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/tensor.h"
#include "base/thread_pool.h"
#include "quant/quant_spec.h"
#include "quant/quantized_matrix.h"

namespace anelm::quant {

// The Gram matrix of one input is kept in full up to this width (256 MiB of
// f32); wider inputs keep only its diagonal, and the methods that need the
// whole matrix fall back to the diagonal ones for them.
constexpr int64_t max_gram_inputs = 8192;

struct InputStats {
    explicit InputStats(int64_t n_in);

    int64_t n_in = 0;
    int64_t rows = 0;          // input rows (tokens) seen
    std::vector<double> diag;  // diag(XᵀX): each input's energy
    std::vector<float> gram;   // XᵀX [n_in, n_in]; empty past max_gram_inputs
    // Where the inputs came from quantized layers: Pᵀ [n_in, n_in] of
    // quant/output_target.h, which the weights are mapped by before
    // palettizing, so that they aim at the f32 model's outputs; else empty.
    std::vector<float> target;

    bool has_gram() const { return !gram.empty(); }
    // Adds the rows of x, f32 [rows, n_in].
    void add(const float* x, int64_t n_rows, ThreadPool& pool);
};

// By the name of the weight a linear layer reads (ir::Weight::name).
using CalibrationStats = std::map<std::string, std::shared_ptr<const InputStats>>;

// How calibration statistics shape a LUT (docs/quantization.md):
// weighted: each group's table is the k-means of its weights weighted by their
//   inputs' energy (diag XᵀX), codes the nearest entries;
// gptq: that table as the grid, the codes chosen column after column with the
//   error of each fed forward onto the columns not yet chosen (GPTQ's update
//   with the full XᵀX).
enum class CalibMethod : uint8_t { weighted, gptq };
const char* calib_method_name(CalibMethod m);
CalibMethod calib_method_from_name(const std::string& name);  // throws Error

// A matrix a sequential calibration pass quantized on its way, and what from.
struct MadeMatrix {
    // The weight's bytes, kept alive where a pass rewrote them into storage of
    // the walk's program (ir::Weight::storage), which ends with the walk.
    TensorView view;
    std::shared_ptr<const void> storage;
    QuantChoice choice;
    uint64_t seed = 0;
    bool int8_dot = false;
    std::shared_ptr<const QuantizedMatrix> matrix;
};

struct Calibration;
class GramFactorCache;

// A model's statistics and the method to use them with.
struct ModelCalibration {
    CalibrationStats stats;
    CalibMethod method = CalibMethod::gptq;
    int64_t tokens = 0;  // calibration tokens run
    // How often each token id occurs in the calibration text: an embedding's
    // rows are weighed by it (a row read often counts more), by id.
    std::vector<double> token_counts;
    // Whether each layer's statistics were taken with the layers before it
    // quantized (runtime/calibration.h), and the matrices made on the way, by
    // weight name: quantizing the same bytes the same way takes them as made.
    bool sequential = false;
    std::map<std::string, MadeMatrix> made;

    // The statistics of the weight named `name`, or null; a tied LM head split
    // off as "<name>:head" has its embedding's name's.
    const InputStats* find(const std::string& name) const;
    // The matrix the pass made of the bytes of `view` (the same bytes, or a
    // copy of them made by the same pass over another program) as `choice`,
    // or null.
    std::shared_ptr<const QuantizedMatrix> made_of(const std::string& name, const TensorView& view,
                                                   const QuantChoice& choice, uint64_t seed,
                                                   bool int8_dot) const;
    // How to calibrate the weight `name`, read as `component` and, with
    // `linear`, by a linear node (its inputs' statistics, aimed unless it is a
    // tied embedding); an embedding table alone by the token counts.
    Calibration for_weight(const std::string& name, Component component, bool linear,
                           GramFactorCache* factors) const;
};

// The factor GPTQ reads (gram_factor.h) for the last inputs asked about:
// consecutive weights that share inputs (q, k, v) factor them once, and only
// one factor is held at a time.
class GramFactorCache {
public:
    const std::vector<float>& factor_of(const InputStats& stats, ThreadPool& pool);

private:
    const InputStats* stats_ = nullptr;
    std::vector<float> factor_;
};

// Calibration for one weight: none when both stats and row_counts are null.
struct Calibration {
    const InputStats* stats = nullptr;
    CalibMethod method = CalibMethod::gptq;
    GramFactorCache* factors = nullptr;  // null: factor afresh
    // Map the weights by stats->target first; not for a tied embedding, whose
    // rows are also looked up as they are.
    bool aim = true;
    // For an embedding (no stats): how often each row is looked up
    // (ModelCalibration::token_counts); rows past its end count as unseen.
    const std::vector<double>* row_counts = nullptr;

    bool any() const { return stats || row_counts; }
};

}  // namespace anelm::quant
