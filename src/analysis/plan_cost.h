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
    double overhead_ms = 0;  // ... dispatch and call round trips, dequantization
};

struct Footprint {
    double weights_bytes = 0;  // every weight at its stored precision
    double kv_bytes = 0;       // f16 KV cache at n_ctx, and recurrent states
    double runtime_bytes = 0;  // logits and the prefill batch's activations
    double total() const { return weights_bytes + kv_bytes + runtime_bytes; }
};

enum class Unit { ane, gpu };
const char* unit_name(Unit u);

struct ChipPlan {
    Chip chip;
    UnitSpeed ane, gpu;
    Footprint memory;
    Unit recommended = Unit::gpu;
    std::string reason;  // one line, from the notes' "Decide" rules
};

UnitSpeed predict_ane(const Chip& chip, const PlanInput& in);
UnitSpeed predict_gpu(const Chip& chip, const PlanInput& in);
Footprint footprint(const PlanInput& in);
ChipPlan plan_chip(const Chip& chip, const PlanInput& in);

// Package power while decoding, from the one published energy measurement (M4 Max);
// 0 where nothing is measured. In plan_energy.cpp.
double decode_watts(const Chip& chip, Unit unit);

}  // namespace anelm::plan
