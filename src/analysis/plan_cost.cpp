// The cost model. Sources: [notes] = ../shared/docs/ane-llm-notes.txt, with the
// section in quotes; [apple-llama] = Apple's "On Device Llama 3.1 with Core ML"
// article as the notes quote it. docs/plan.md explains each term.
#include "analysis/plan_cost.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace anelm::plan {

namespace {

// [notes] "Bandwidth, SRAM, dispatch": ~0.095 ms per ANE dispatch; we count one per
// transformer layer (its ops chain within the 16-64 the notes advise) and one for the head.
constexpr double ane_dispatch_ms = 0.095;
// [notes] same section: Orion's ~2.3 ms IOSurface round trip per ANE evaluation; taken as
// the cost of each Core ML prediction a decoded token makes.
constexpr double ane_call_ms = 2.3;
// [notes] "ANEMLL conversion": chunks of at most 950 MB, 2 by default; prefill batch 64.
constexpr double anemll_chunk_bytes = 950e6;
constexpr int anemll_min_chunks = 2;
constexpr int ane_prefill_batch = 64;
// [notes] "Bandwidth, SRAM, dispatch": ~32 MB of SRAM; a 2048^2 matmul runs at 5.7 TFLOPS,
// 4096^2 (past the cliff) at 4.0.
constexpr double ane_sram_bytes = 32.0 * 1024 * 1024;
constexpr double ane_cliff_factor = 4.0 / 5.7;
// The fraction of peak memory bandwidth a GPU decode reaches. [apple-llama] via [notes]
// "Decide": Llama-3.1-8B f16 with stateful KV decodes at 16.26 tok/s on M1 Max (400 GB/s)
// reading 15.0 GB a token: 0.61. Checked against MLX in the --validate table.
constexpr double gpu_bandwidth_efficiency = 0.61;
// The fraction of peak GPU FLOPS a prefill matmul reaches: no published point; an
// assumption (docs/plan.md).
constexpr double gpu_compute_efficiency = 0.5;
// GPU prefill batch: tokens sharing one read of the weights; an assumption (docs/plan.md).
constexpr int gpu_prefill_batch = 512;

constexpr double f16_bytes = 2;

// Stored bits per weight of a matrix [n_out, n_in] (codes, tables, scales).
double bits_of(const quant::QuantChoice& c, int64_t n_out, int64_t n_in) {
    return quant::stored_bits(c, n_out, n_in) / (double(n_out) * double(n_in));
}

// Bytes of weights a decoded token reads: every layer matrix, the head, one embedding row.
double weight_bytes_per_token(const PlanInput& in) {
    const ModelShape& m = in.shape;
    const Precision& p = in.precision;
    return (m.layer_params * p.ffn_bits + m.head_params * p.head_bits + m.n_embd * p.embed_bits) /
           8;
}

double kv_bytes(const PlanInput& in) {
    return in.shape.kv_elems(in.n_ctx) * f16_bytes;
}

// Core ML predictions a token makes on the ANE in ANEMLL's layout.
int ane_calls(const PlanInput& in) {
    if (in.ane_calls > 0) return in.ane_calls;
    const double layer_bytes = in.shape.layer_params * in.precision.ffn_bits / 8;
    const int chunks =
        std::max(anemll_min_chunks, int(std::ceil(layer_bytes / anemll_chunk_bytes)));
    return 1 + chunks + 1;
}

// FLOPs of one prompt token: every layer weight once, and attention over `span` positions.
double prefill_flops(const ModelShape& m, double span) {
    return 2 * m.layer_params + 4 * m.attn_q_dim_sum * span;
}

}  // namespace

const char* unit_name(Unit u) {
    return u == Unit::ane ? "ANE" : "GPU";
}

Precision precision_from_spec(const quant::QuantSpec& spec, const ModelShape& m) {
    using quant::Component;
    // Representative matrices: the FFN's up projection, the head, the embedding table.
    const int64_t ffn_out = std::max<int64_t>(m.big_n_out, 1);
    const int64_t ffn_in = std::max<int64_t>(m.big_n_in, 1);
    Precision p;
    p.ffn_bits = bits_of(spec.choice_for(Component::ffn, ffn_out * ffn_in), ffn_out, ffn_in);
    p.head_bits = bits_of(spec.choice_for(Component::head, m.n_vocab * m.n_embd), m.n_vocab, m.n_embd);
    p.embed_bits =
        bits_of(spec.choice_for(Component::embed, m.n_vocab * m.n_embd), m.n_vocab, m.n_embd);
    p.label = spec.to_string();
    if (spec.per_weight.empty() || m.layer_matrices.empty()) return p;
    // A width per matrix: the layers' bits are the mean over their weights.
    double bits = 0, weights = 0;
    for (const LayerMatrix& w : m.layer_matrices) {
        const int64_t numel = w.n_out * w.n_in;
        bits += quant::stored_bits(spec.choice_for_weight(Component::ffn, w.name, numel), w.n_out,
                                   w.n_in);
        weights += double(numel);
    }
    p.ffn_bits = bits / weights;
    const std::string head = m.tied ? "model.embed_tokens.weight:head" : "lm_head.weight";
    p.head_bits = bits_of(spec.choice_for_weight(Component::head, head, m.n_vocab * m.n_embd),
                          m.n_vocab, m.n_embd);
    p.label += fmt::format(" + a width per matrix ({:.2f} bits per layer weight)", p.ffn_bits);
    return p;
}

UnitSpeed predict_ane(const Chip& chip, const PlanInput& in) {
    UnitSpeed u;
    if (chip.ane_gbps <= 0) return u;
    u.available = true;
    const ModelShape& m = in.shape;
    const double bw = chip.ane_gbps * 1e9;
    const double overhead_ms = (m.n_layer + 1) * ane_dispatch_ms + ane_calls(in) * ane_call_ms;
    u.weights_ms = weight_bytes_per_token(in) / bw * 1e3;
    u.kv_ms = kv_bytes(in) / bw * 1e3;  // static shapes: attention reads all n_ctx positions
    u.overhead_ms = overhead_ms;
    u.decode_tps = 1e3 / (u.weights_ms + u.kv_ms + u.overhead_ms);

    // Prefill: a batch of 64 shares one read of the weights; compute slows past the SRAM
    // cliff when the largest matmul's weights and activations no longer fit.
    const double working_set = (double(m.big_n_out) * m.big_n_in +
                                double(ane_prefill_batch) * (m.big_n_out + m.big_n_in)) *
                               f16_bytes;
    const double tflops = chip.ane_tflops * (working_set > ane_sram_bytes ? ane_cliff_factor : 1.0);
    const double compute_ms =
        ane_prefill_batch * prefill_flops(m, double(in.n_ctx)) / (tflops * 1e12) * 1e3;
    const double read_ms = m.layer_params * in.precision.ffn_bits / 8 / bw * 1e3;
    u.prefill_tps = ane_prefill_batch * 1e3 / (std::max(compute_ms, read_ms) + overhead_ms);
    return u;
}

UnitSpeed predict_gpu(const Chip& chip, const PlanInput& in) {
    UnitSpeed u;
    if (chip.mem_gbps <= 0) return u;
    u.available = true;
    const ModelShape& m = in.shape;
    const double bw = chip.mem_gbps * 1e9 * gpu_bandwidth_efficiency;
    u.weights_ms = weight_bytes_per_token(in) / bw * 1e3;
    u.kv_ms = kv_bytes(in) / bw * 1e3;
    // The kernels' dispatch overlaps the reads: only the floor's excess adds to them.
    const double floor_ms = double(m.n_layer + 1) * gpu_layer_floor_ms;
    u.overhead_ms = std::max(0.0, floor_ms - (u.weights_ms + u.kv_ms));
    if (in.precision.gpu_dequant_flops > 0 && chip.gpu_tflops > 0)
        u.overhead_ms += (m.layer_params + m.head_params) * in.precision.gpu_dequant_flops /
                         (chip.gpu_tflops * 1e12) * 1e3;
    u.decode_tps = 1e3 / (u.weights_ms + u.kv_ms + u.overhead_ms);
    if (chip.gpu_tflops > 0) {
        // Causal attention: a prompt token attends to n_ctx / 2 positions on average. A
        // prefill step shares one read of the weights and one dispatch of the kernels.
        const double compute_ms = prefill_flops(m, in.n_ctx / 2.0) /
                                  (chip.gpu_tflops * 1e12 * gpu_compute_efficiency) * 1e3;
        const double step_ms = std::max(u.weights_ms, floor_ms) / gpu_prefill_batch;
        u.prefill_tps = 1e3 / std::max(compute_ms, step_ms);
    }
    return u;
}

HybridSpeed predict_hybrid(const Chip& chip, const PlanInput& in, const UnitSpeed& ane,
                           const UnitSpeed& gpu) {
    HybridSpeed h;
    if (!ane.available || !gpu.available || ane.prefill_tps <= 0 || gpu.prefill_tps <= 0) return h;
    h.available = true;
    const auto prompt = static_cast<double>(in.n_ctx);
    h.handoff_bytes = kv_bytes(in);
    // Read from the ANE's state and written in the GPU's layout: twice the bytes.
    h.handoff_ms = 2 * h.handoff_bytes / (chip.mem_gbps * 1e9 * gpu_bandwidth_efficiency) * 1e3;
    h.ane_ttft_ms = prompt / ane.prefill_tps * 1e3;
    h.gpu_ttft_ms = prompt / gpu.prefill_tps * 1e3;
    h.ttft_ms = h.ane_ttft_ms + h.handoff_ms;
    h.decode_tps = gpu.decode_tps;
    const double saved_per_token_ms = 1e3 / ane.decode_tps - 1e3 / gpu.decode_tps;
    if (saved_per_token_ms > 0) h.beats_ane_after_tokens = h.handoff_ms / saved_per_token_ms;
    h.beats_gpu_prompt = h.ttft_ms < h.gpu_ttft_ms;
    return h;
}

Footprint footprint(const PlanInput& in) {
    const ModelShape& m = in.shape;
    const Precision& p = in.precision;
    Footprint f;
    // A tied head stored at another precision than the embeddings is a second copy (ANEMLL
    // keeps f16 embeddings and a LUT6 head).
    const bool head_copy = !m.tied || p.head_bits != p.embed_bits;
    f.weights_bytes = (m.layer_params * p.ffn_bits + m.embed_params * p.embed_bits +
                       (head_copy ? m.head_params * p.head_bits : 0)) /
                      8;
    f.kv_bytes = kv_bytes(in);
    // ANEMLL's packages: the chunks hold the layers; the embeddings and the LM head are
    // packages of their own, so a tied head is always a second copy there.
    f.ane_functions = m.window > 0 && in.n_ctx > m.window ? 4 : 2;
    f.ane_layer_bytes = m.layer_params * p.ffn_bits / 8;
    f.ane_other_bytes = (m.embed_params * p.embed_bits + m.head_params * p.head_bits) / 8;
    // f32 logits, and the prefill batch's widest activations in f16.
    f.runtime_bytes =
        m.n_vocab * 4.0 + double(ane_prefill_batch) * (m.n_embd + m.big_n_out) * 4 * f16_bytes;
    return f;
}

ChipPlan plan_chip(const Chip& chip, const PlanInput& in) {
    ChipPlan plan;
    plan.chip = chip;
    plan.ane = predict_ane(chip, in);
    plan.gpu = predict_gpu(chip, in);
    plan.hybrid = predict_hybrid(chip, in, plan.ane, plan.gpu);
    plan.memory = footprint(in);
    plan.memory_budget_bytes = memory_budget_bytes(chip);
    for (auto [unit, speed] : {std::pair{Unit::ane, &plan.ane}, std::pair{Unit::gpu, &plan.gpu}})
        if (const double w = decode_watts(chip, unit); w > 0 && speed->available)
            speed->energy_j = w / speed->decode_tps;

    recommend(plan, in);
    return plan;
}

}  // namespace anelm::plan
