// The cost model of `anelm plan`: decode and prefill speed of a model on a
// chip's Neural Engine and GPU, its memory footprint, and which unit to use.
// Every assumption is listed in docs/plan.md.
#pragma once

#include <cstdint>
#include <string>

#include "analysis/plan_chips.h"
#include "analysis/plan_shape.h"
#include "quant/quant_spec.h"

namespace anelm::plan {

// Bits stored per weight, per component, scales and tables included.
struct Precision {
    double embed_bits = 16, ffn_bits = 16, head_bits = 16;
    std::string label = "f16";
    // Extra GPU work per weight to expand it (Core ML's block-int4 GPU path); 0 when the
    // runtime's kernels hide it behind the memory reads.
    double gpu_dequant_flops = 0;
};

// The bits of a quant spec (docs/quantization.md) on this model's matrices.
Precision precision_from_spec(const quant::QuantSpec& spec, const ModelShape& shape);

struct PlanInput {
    ModelShape shape;
    Precision precision;
    int64_t n_ctx = 512;  // ANEMLL's default context
    // Core ML predictions per decoded token on the ANE; 0: ANEMLL's layout (embeddings,
    // the layer chunks, the LM head).
    int ane_calls = 0;
};

struct UnitSpeed {
    bool available = false;  // false: the chip lacks a number the unit needs
    double decode_tps = 0;   // tokens per second at the end of n_ctx
    double prefill_tps = 0;  // 0: no compute figure for this chip
    double energy_j = -1;    // joules per decoded token; < 0: no power measurement
    double weights_ms = 0;   // decode time reading weights
    double kv_ms = 0;        // ... reading the KV cache and states
    // ... the rest: the ANE's dispatches and call round trips; the GPU's dispatch floor beyond
    // the reads, and dequantization.
    double overhead_ms = 0;
};

// The least time a GPU decode step spends per transformer layer (and one for the head),
// however little the layer reads: its kernels' dispatch and synchronization. The GPU runs
// them while it reads, so a token takes the larger of the reads and this floor. The geometric
// mean of two MLX decodes on one M3 Ultra whose reads take a fraction of their token time
// (Rapid-MLX PRs #633 and #640, mlx 0.31.2): Qwen3-0.6B 4-bit at 387.64 tok/s, 2.58 ms over
// 29 dispatch groups (0.089 ms each), and Gemma 3 1B 4-bit at 257.65 tok/s, 3.88 ms over 27
// (0.144 ms). Both are rows of the --validate table (docs/plan.md, "Decode on the GPU").
inline constexpr double gpu_layer_floor_ms = 0.113;

// Bytes of ANE memory wired per byte of weights, for each function of a package that is
// loaded. Measured by Forge (research/ane-peers-2026.md section 3, its
// FEEDBACK_ANE_MULTIFUNCTION_MEMORY.md): a 0.69 GB chunk of LUT weights with two functions
// wired +1.05 GB with the first function loaded and +2.09 GB with both, one MLModelAsset, M6,
// macOS 27. Each function wires its own copy: 2.09 / (2 x 0.69) = 1.51 (1.52 for the first,
// 1.51 for the second).
inline constexpr double ane_wired_per_function = 2.09 / (2 * 0.69);

struct Footprint {
    double weights_bytes = 0;  // every weight at its stored precision
    double kv_bytes = 0;       // f16 KV cache at n_ctx, and recurrent states
    double runtime_bytes = 0;  // logits and the prefill batch's activations
    // One copy of everything: what the GPU needs.
    double total() const { return weights_bytes + kv_bytes + runtime_bytes; }

    // The ANE, loaded as ANEMLL's runners load it: each layer chunk once per function (infer
    // and prefill; their rotate forms too past a sliding window), the embeddings and the LM
    // head once each, every function wiring its own copy of its package's weights.
    int ane_functions = 2;       // functions loaded per layer chunk
    double ane_layer_bytes = 0;  // the layer chunks' weights, stored
    double ane_other_bytes = 0;  // the embeddings' and the LM head's, stored
    double ane_wired_weights() const {
        return ane_wired_per_function * (ane_layer_bytes * ane_functions + ane_other_bytes);
    }
    // Compared with the chip's memory budget.
    double ane_loaded() const { return ane_wired_weights() + kv_bytes + runtime_bytes; }
};

// The hybrid: a prompt of n_ctx tokens prefilled on the ANE, its KV cache handed to the
// GPU (read and written once at the GPU's achieved memory bandwidth), decode on the GPU.
struct HybridSpeed {
    bool available = false;    // both units have decode and prefill figures
    double handoff_bytes = 0;  // the prompt's f16 K and V
    double handoff_ms = 0;
    double ttft_ms = 0;      // ANE prefill + hand-off
    double ane_ttft_ms = 0;  // the prompt on the ANE alone
    double gpu_ttft_ms = 0;  // ... on the GPU alone
    double decode_tps = 0;   // the GPU's
    // Generated tokens past which hybrid's total time beats the ANE alone (the GPU's faster
    // decode has paid for the hand-off); < 0: never, the ANE decodes as fast.
    double beats_ane_after_tokens = -1;
    // Hybrid's prompt (ANE prefill + hand-off) is faster than the GPU's prefill; both
    // grow with the prompt, so this holds at any prompt length.
    bool beats_gpu_prompt = false;
};

enum class Unit { ane, gpu };
const char* unit_name(Unit u);

// What decided a recommendation: a unit the chip cannot use (no ANE figure, a context past
// what ANE models run, the ANE's loaded memory over the budget), or the columns plan prints:
// decode speed alone where no energy is measured, else speed and joules per token.
enum class Basis { no_ane, context, memory, speed, energy };
const char* basis_name(Basis b);

struct ChipPlan {
    Chip chip;
    UnitSpeed ane, gpu;
    HybridSpeed hybrid;
    Footprint memory;
    double memory_budget_bytes = 0;  // memory_budget_bytes(chip); 0: no RAM figure
    bool ane_fits() const {
        return memory_budget_bytes <= 0 || memory.ane_loaded() <= memory_budget_bytes;
    }
    bool gpu_fits() const {
        return memory_budget_bytes <= 0 || memory.total() <= memory_budget_bytes;
    }
    Unit recommended = Unit::gpu;
    Basis basis = Basis::no_ane;
    std::string reason;  // one line, with the numbers it rests on
};

UnitSpeed predict_ane(const Chip& chip, const PlanInput& in);
UnitSpeed predict_gpu(const Chip& chip, const PlanInput& in);
HybridSpeed predict_hybrid(const Chip& chip, const PlanInput& in, const UnitSpeed& ane,
                           const UnitSpeed& gpu);
Footprint footprint(const PlanInput& in);
ChipPlan plan_chip(const Chip& chip, const PlanInput& in);

// Package power while decoding, from the one published energy measurement (M4 Max);
// 0 where nothing is measured. In plan_energy.cpp.
double decode_watts(const Chip& chip, Unit unit);

// Sets plan.recommended, basis and reason from the plan's own numbers. In plan_advice.cpp,
// with the forms the table and the reasons print numbers in: tokens/s ("305", "67.4") and
// joules per token ("0.36").
void recommend(ChipPlan& plan, const PlanInput& in);
std::string tps_text(double tps);
std::string joules_text(double j);

}  // namespace anelm::plan
