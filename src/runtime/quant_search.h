// --quant auto: the LUT width of every matrix chosen by measured sensitivity,
// under a bits-per-weight budget (auto:bpw=B) or a KL budget (auto:kl=K).
//
// Each matrix is quantized alone at every candidate width (calibrated), and
// the change in its outputs on the calibration inputs is measured
// (quant::output_error). One run of the model per matrix, with that matrix
// alone at the reference width, measures its KL from the f32 logits; its KL
// at the other widths is predicted in proportion to the output error (KL is
// quadratic in small perturbations, as is the output error). The widths then
// minimise the sum of the matrices' KL within the budget, exactly, by a
// dynamic programme over the bits (docs/quantization.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/progress.h"
#include "io/model_spec.h"
#include "io/weight_store.h"
#include "quant/input_stats.h"
#include "quant/quant_spec.h"

namespace anelm {

struct AutoQuantTarget {
    double bits_per_weight = 0;  // > 0: the least KL within this budget
    double kl = 0;               // > 0: the fewest bits whose predicted KL is at most this
};

// "auto:bpw=4.5" or "auto:kl=0.05"; nullopt for a text that is not auto.
// Throws Error naming the part for a malformed one.
std::optional<AutoQuantTarget> parse_auto_target(std::string_view text);

// The candidates: LUTs of 2, 3, 4, 6 and 8 bits (groups of 8 and of 32 rows) and f16;
// a width whose codes do not end each row on a byte (3 or 6 bits of an odd
// input count), which Core ML's packages cannot hold, is left out.
std::vector<quant::QuantChoice> auto_candidates();

// One option per matrix: bits[k] and kl[k] for candidate k.
struct BudgetItem {
    std::vector<double> bits, kl;
};
// The candidate of each item that minimises the sum of kl with the sum of
// bits at most budget (never over it): exact when bits are multiples of the
// budget's 1/65536, else up to the rounding to those units. Empty when even
// the cheapest choices exceed it.
std::vector<int> solve_budget(const std::vector<BudgetItem>& items, double budget);

struct MatrixChoice {
    std::string name;  // the weight in the program ("<name>:head" for a split tied head)
    int64_t n_out = 0, n_in = 0;
    quant::QuantChoice choice;
    double bits = 0;
    double predicted_kl = 0;
    bool searched = false;  // false: fixed by the spec (embeddings, small tensors)
};

struct AutoQuantResult {
    quant::QuantSpec spec;  // the base spec with per_weight holding every choice
    std::vector<MatrixChoice> matrices;
    double bits_per_weight = 0;  // over every matrix listed
    double predicted_kl = 0;
    double measured_kl = 0;  // every choice applied, on the same calibration window
    int64_t tokens = 0;      // of that window
    double seconds = 0;
    // The chosen matrices as that measurement made them (exact products), by
    // weight name, for the quantization that follows to take as they are.
    std::map<std::string, quant::MadeMatrix> made;
};

// Throws Error when the target's bits per weight are below what the
// narrowest widths take (before calibration, which takes minutes).
void check_auto_target(const ModelSpec& spec, const WeightStore& weights,
                       const quant::QuantSpec& base, const AutoQuantTarget& target);

// Chooses over the linear weights (ffn and head) of at least
// base.min_elements elements; embeddings keep base.embed. KL runs on the
// first window. progress sees matrices done out of all.
AutoQuantResult choose_quantization(const ModelSpec& spec, const WeightStore& weights,
                                    const quant::QuantSpec& base,
                                    const quant::ModelCalibration& calibration,
                                    const std::vector<std::vector<int32_t>>& windows,
                                    const AutoQuantTarget& target, int threads,
                                    const ProgressFn& progress = {});

}  // namespace anelm
