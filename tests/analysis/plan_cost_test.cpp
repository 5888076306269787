// The cost model of `anelm plan`: directions every prediction must move in, and
// the memory arithmetic checked against numbers computed here from the shapes.
#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/plan_cost.h"
#include "analysis/plan_shape.h"
#include "base/error.h"
#include "synth/synth.h"

namespace anelm::plan {
namespace {

PlanInput input(const std::string& model, const std::string& quant, int64_t n_ctx) {
    PlanInput in;
    in.shape = resolve_model(model);
    in.precision = precision_from_spec(quant::parse_quant_spec(quant), in.shape);
    in.n_ctx = n_ctx;
    return in;
}

// A converted folder's width per matrix: priced over every matrix, landing
// where the all-4-bit and all-8-bit specs bound it.
TEST(PlanCost, WidthsPerMatrixArePricedBetweenTheUniformSpecs) {
    const ModelShape shape = resolve_model("qwen3-0.6b");
    ASSERT_FALSE(shape.layer_matrices.empty());
    const quant::QuantSpec lut4 = quant::parse_quant_spec("ffn=4:8"),
                           lut8 = quant::parse_quant_spec("ffn=8:8");
    const double bits4 = precision_from_spec(lut4, shape).ffn_bits,
                 bits8 = precision_from_spec(lut8, shape).ffn_bits;

    quant::QuantSpec all8 = lut4, some8 = lut4;
    for (const LayerMatrix& m : shape.layer_matrices) {
        all8.per_weight[m.name] = lut8.ffn;
        if (m.name.ends_with("k_proj.weight")) some8.per_weight[m.name] = lut8.ffn;
    }
    // Every matrix at 8 bits: 8 plus the tables' share, which the uniform
    // spec prices on one representative matrix.
    const double every8 = precision_from_spec(all8, shape).ffn_bits;
    EXPECT_GT(every8, 8.2);
    EXPECT_LE(every8, bits8);
    const Precision mixed = precision_from_spec(some8, shape);
    EXPECT_GT(mixed.ffn_bits, bits4 + 0.05);
    EXPECT_LT(mixed.ffn_bits, bits4 + 0.5);  // k_proj is a small share of the weights

    PlanInput in;
    in.shape = shape;
    const auto decode = [&](const quant::QuantSpec& spec) {
        in.precision = precision_from_spec(spec, shape);
        return plan_chip(find_chip("M4"), in).ane.decode_tps;
    };
    EXPECT_LT(decode(some8), decode(lut4));
    EXPECT_GT(decode(some8), decode(lut8));
}

TEST(PlanCost, MoreBandwidthIsFaster) {
    const PlanInput in = input("qwen3-1.7b", "lut4", 1024);
    Chip chip = find_chip("M4");
    const ChipPlan before = plan_chip(chip, in);
    chip.ane_gbps *= 2;
    chip.mem_gbps *= 2;
    const ChipPlan after = plan_chip(chip, in);
    EXPECT_GT(after.ane.decode_tps, before.ane.decode_tps);
    EXPECT_GT(after.gpu.decode_tps, before.gpu.decode_tps);
    // Fixed dispatch costs keep the ANE from doubling.
    EXPECT_LT(after.ane.decode_tps, 2 * before.ane.decode_tps);
}

TEST(PlanCost, QuantizedDecodesFasterAndTakesLessMemory) {
    for (const Chip& chip : {find_chip("M1 Max"), find_chip("M4 Max"), find_chip("A18 Pro")}) {
        const ChipPlan f16 = plan_chip(chip, input("llama-3.2-1b", "none", 512));
        const ChipPlan lut4 = plan_chip(chip, input("llama-3.2-1b", "lut4", 512));
        const ChipPlan int8 = plan_chip(chip, input("llama-3.2-1b", "int8", 512));
        EXPECT_GT(lut4.ane.decode_tps, int8.ane.decode_tps) << chip.name;
        EXPECT_GT(int8.ane.decode_tps, f16.ane.decode_tps) << chip.name;
        EXPECT_GT(lut4.gpu.decode_tps, f16.gpu.decode_tps) << chip.name;
        EXPECT_LT(lut4.memory.weights_bytes, f16.memory.weights_bytes) << chip.name;
    }
}

TEST(PlanCost, LongerContextNeedsMoreMemoryAndIsNotFaster) {
    const Chip& chip = find_chip("M3 Max");
    double last_memory = 0, last_ane = 1e300, last_gpu = 1e300;
    for (int64_t n_ctx : {256, 512, 1024, 2048, 4096, 8192}) {
        const ChipPlan p = plan_chip(chip, input("qwen3-4b", "lut4", n_ctx));
        EXPECT_GT(p.memory.total(), last_memory) << n_ctx;
        EXPECT_LT(p.ane.decode_tps, last_ane) << n_ctx;
        EXPECT_LT(p.gpu.decode_tps, last_gpu) << n_ctx;
        last_memory = p.memory.total();
        last_ane = p.ane.decode_tps;
        last_gpu = p.gpu.decode_tps;
    }
}

TEST(PlanCost, BiggerModelIsSlower) {
    const Chip& chip = find_chip("M2 Pro");
    const ChipPlan small = plan_chip(chip, input("qwen3-0.6b", "lut4", 512));
    const ChipPlan big = plan_chip(chip, input("qwen3-8b", "lut4", 512));
    EXPECT_GT(small.ane.decode_tps, big.ane.decode_tps);
    EXPECT_GT(small.gpu.decode_tps, big.gpu.decode_tps);
    EXPECT_GT(small.ane.prefill_tps, big.ane.prefill_tps);
    EXPECT_GT(small.gpu.prefill_tps, big.gpu.prefill_tps);
}

// Qwen3-0.6B from its synth preset, f16: the weights and the KV cache worked out
// here from the preset's hyperparameters, not from the shape the planner builds.
TEST(PlanCost, FootprintArithmeticOnASynthPreset) {
    const SynthPreset preset = synth_preset("qwen3-0.6b");
    const ModelSpec& s = preset.spec;
    ASSERT_TRUE(s.tie_word_embeddings);
    const int64_t q = s.n_head * s.head_dim, kv = s.n_head_kv * s.head_dim;
    const int64_t per_layer =
        s.n_embd * q + s.n_embd * kv + s.n_embd * kv + q * s.n_embd + 3 * s.n_embd * s.n_ff;
    const int64_t weights = s.n_layer * per_layer + s.n_vocab * s.n_embd;  // tied head
    const int64_t n_ctx = 1024;
    const int64_t kv_bytes = 2 * s.n_layer * kv * n_ctx * 2;

    const ChipPlan p = plan_chip(find_chip("M4"), input("qwen3-0.6b", "none", n_ctx));
    EXPECT_DOUBLE_EQ(p.memory.weights_bytes, 2.0 * weights);
    EXPECT_DOUBLE_EQ(p.memory.kv_bytes, double(kv_bytes));
    EXPECT_GT(p.memory.runtime_bytes, s.n_vocab * 4.0);  // f32 logits at least
    EXPECT_DOUBLE_EQ(p.memory.total(),
                     p.memory.weights_bytes + p.memory.kv_bytes + p.memory.runtime_bytes);
    // Qwen3-0.6B is 0.6 B weights (0.44 B in the layers, 0.16 B of embeddings).
    EXPECT_NEAR(weights / 1e9, 0.596, 0.005);
}

// ANEMLL's lut4 keeps the embeddings f16 and gives the tied head its own LUT6 copy.
TEST(PlanCost, Lut4FootprintCountsTheHeadCopy) {
    const SynthPreset preset = synth_preset("qwen3-0.6b");
    const ModelSpec& s = preset.spec;
    const PlanInput in = input("qwen3-0.6b", "lut4", 512);
    // A LUT of 2^bits f16 entries per group of 8 rows of n_in weights.
    EXPECT_EQ(in.precision.embed_bits, 16);
    EXPECT_DOUBLE_EQ(in.precision.ffn_bits, 4 + 16.0 * 16 / (8 * s.n_embd));
    EXPECT_DOUBLE_EQ(in.precision.head_bits, 6 + 64.0 * 16 / (8 * s.n_embd));
    const double embed = double(s.n_vocab) * s.n_embd;
    const Footprint f = footprint(in);
    EXPECT_NEAR(f.weights_bytes,
                in.shape.layer_params * in.precision.ffn_bits / 8 + embed * 2 +
                    embed * in.precision.head_bits / 8,
                1);
}

// The per-function factor reproduces the measurement it comes from: a 0.69 GB chunk wiring
// +1.05 GB with one function loaded and +2.09 GB with two.
TEST(PlanCost, WiredPerFunctionComesFromTheMeasurement) {
    EXPECT_NEAR(ane_wired_per_function, 1.51, 0.005);
    EXPECT_NEAR(0.69 * ane_wired_per_function, 1.05, 0.01);
    EXPECT_NEAR(2 * 0.69 * ane_wired_per_function, 2.09, 1e-9);
}

// Loaded for the ANE, every layer chunk is wired once per function (infer, prefill), the
// embeddings and the LM head once each, the KV cache once.
TEST(PlanCost, AneLoadedFootprintCountsEachFunction) {
    const SynthPreset preset = synth_preset("qwen3-0.6b");
    const ModelSpec& s = preset.spec;
    const PlanInput in = input("qwen3-0.6b", "lut4", 512);
    const Footprint f = footprint(in);
    const double layers = in.shape.layer_params * in.precision.ffn_bits / 8;
    const double embed = double(s.n_vocab) * s.n_embd;
    const double other = embed * 2 + embed * in.precision.head_bits / 8;  // f16 table, LUT6 head
    EXPECT_EQ(f.ane_functions, 2);
    EXPECT_NEAR(f.ane_layer_bytes, layers, 1);
    EXPECT_NEAR(f.ane_other_bytes, other, 1);
    EXPECT_NEAR(f.ane_loaded(), 1.5145 * (2 * layers + other) + f.kv_bytes + f.runtime_bytes,
                0.001 * f.ane_loaded());
    // More than one copy: the ANE needs more than the GPU.
    EXPECT_GT(f.ane_loaded(), f.total());
    // The prediction fields are unchanged by it.
    EXPECT_DOUBLE_EQ(f.total(), f.weights_bytes + f.kv_bytes + f.runtime_bytes);
}

// Gemma 3 past its sliding window loads infer_rotate and prefill_rotate too; its sliding
// layers keep a window of cache.
TEST(PlanCost, SlidingWindowPastTheWindowLoadsFourFunctions) {
    const SynthPreset preset = synth_preset("gemma-3-1b");
    const ModelSpec& s = preset.spec;
    ASSERT_GT(s.sliding_window, 0);
    EXPECT_EQ(footprint(input("gemma-3-1b", "lut4", s.sliding_window)).ane_functions, 2);
    const Footprint past = footprint(input("gemma-3-1b", "lut4", 2 * s.sliding_window));
    EXPECT_EQ(past.ane_functions, 4);
    EXPECT_NEAR(past.ane_wired_weights(),
                ane_wired_per_function * (4 * past.ane_layer_bytes + past.ane_other_bytes), 1);
    const auto n_sliding = std::count(s.sliding_layers.begin(), s.sliding_layers.end(), true);
    const double kv_dim = double(s.n_head_kv) * s.head_dim;
    const int64_t n_ctx = 2 * s.sliding_window;
    EXPECT_DOUBLE_EQ(past.kv_bytes, 2 * kv_dim * 2 *
                                        (double(s.n_layer - n_sliding) * n_ctx +
                                         double(n_sliding) * s.sliding_window));
    // Models without a window load two whatever the context.
    EXPECT_EQ(footprint(input("qwen3-0.6b", "lut4", 32768)).ane_functions, 2);
}

// Budgets: 2/3 of the smallest Mac's RAM up to 36 GB, 3/4 above; 3/4 on an iPhone.
TEST(PlanCost, MemoryBudgetPerChip) {
    constexpr double gib = 1024.0 * 1024 * 1024;
    EXPECT_DOUBLE_EQ(memory_budget_bytes(find_chip("M1")), 8 * gib * 2 / 3);
    EXPECT_DOUBLE_EQ(memory_budget_bytes(find_chip("M4")), 16 * gib * 2 / 3);
    EXPECT_DOUBLE_EQ(memory_budget_bytes(find_chip("M4 Max")), 48 * gib * 3 / 4);
    EXPECT_DOUBLE_EQ(memory_budget_bytes(find_chip("A17 Pro")), 8 * gib * 3 / 4);
    EXPECT_EQ(memory_budget_bytes(find_chip("M6")), 0);  // no RAM figure at hand
    EXPECT_EQ(smallest_budget_chip(Platform::mac).name, "M1");
    EXPECT_EQ(smallest_budget_chip(Platform::iphone).name, "A17 Pro");
    for (const Chip& c : chips())
        if (c.ram_gib > 0)
            EXPECT_GE(memory_budget_bytes(c), memory_budget_bytes(smallest_budget_chip(c.platform)))
                << c.name;
}

// The ANE's loaded footprint, not one copy, is what meets the budget: Qwen3-4B lut4 at 1K
// needs 3.1 GB on the GPU but 7.3 GB wired on the ANE, over an 8 GB M1's 5.7 GB.
TEST(PlanCost, LoadedFootprintOverTheBudgetRecommendsGpu) {
    const ChipPlan m1 = plan_chip(find_chip("M1"), input("qwen3-4b", "lut4", 1024));
    EXPECT_LT(m1.memory.total(), m1.memory_budget_bytes);
    EXPECT_GT(m1.memory.ane_loaded(), m1.memory_budget_bytes);
    EXPECT_FALSE(m1.ane_fits());
    EXPECT_TRUE(m1.gpu_fits());
    EXPECT_EQ(m1.recommended, Unit::gpu);
    EXPECT_NE(m1.reason.find("over the 5.7 GB budget"), std::string::npos) << m1.reason;
    // The same model on a 16 GB M4 fits, and the speed rules decide.
    const ChipPlan m4 = plan_chip(find_chip("M4"), input("qwen3-4b", "lut4", 1024));
    EXPECT_TRUE(m4.ane_fits());
    EXPECT_EQ(m4.reason.find("budget"), std::string::npos) << m4.reason;
    // No RAM figure: nothing to compare with.
    EXPECT_TRUE(plan_chip(find_chip("M6"), input("qwen3-8b", "lut4", 4096)).ane_fits());
}

TEST(PlanCost, ChipWithoutAneBandwidthRecommendsGpu) {
    const ChipPlan p = plan_chip(find_chip("M3 Pro"), input("qwen3-0.6b", "lut4", 512));
    EXPECT_FALSE(p.ane.available);
    EXPECT_TRUE(p.gpu.available);
    EXPECT_EQ(p.recommended, Unit::gpu);
}

// The recommendation follows the numbers plan prints: the faster unit where no energy is
// measured; where it is, the unit that wins both decode speed and joules per token, or the one
// with the larger margin when each wins one.
TEST(PlanCost, RecommendationFollowsThePrintedNumbers) {
    int speed = 0, energy = 0;
    for (const std::string model :
         {"tiny-llama", "qwen3-0.6b", "gemma-3-1b", "qwen3-4b", "llama-3.1-8b"})
        for (const Chip& chip : chips()) {
            const ChipPlan p = plan_chip(chip, input(model, "lut4", 512));
            SCOPED_TRACE(model + " on " + chip.name + ": " + p.reason);
            if (p.basis != Basis::speed && p.basis != Basis::energy) continue;
            const double s = p.gpu.decode_tps / p.ane.decode_tps;
            const Unit faster = s > 1 ? Unit::gpu : Unit::ane;
            // Both speeds, the faster first.
            const double fast = std::max(p.ane.decode_tps, p.gpu.decode_tps);
            const double slow = std::min(p.ane.decode_tps, p.gpu.decode_tps);
            EXPECT_NE(p.reason.find("(" + tps_text(fast) + " vs " + tps_text(slow) + " tok/s)"),
                      std::string::npos);
            if (p.basis == Basis::speed) {
                ++speed;
                EXPECT_TRUE(p.ane.energy_j < 0 || p.gpu.energy_j < 0);
                EXPECT_EQ(p.recommended, faster);
                continue;
            }
            ++energy;
            const double e = p.ane.energy_j / p.gpu.energy_j;
            const Unit cheaper = e < 1 ? Unit::ane : Unit::gpu;
            EXPECT_NE(p.reason.find(joules_text(p.ane.energy_j)), std::string::npos);
            EXPECT_NE(p.reason.find(joules_text(p.gpu.energy_j)), std::string::npos);
            if (faster == cheaper)
                EXPECT_EQ(p.recommended, faster);
            else
                EXPECT_EQ(p.recommended,
                          std::max(s, 1 / s) >= std::max(e, 1 / e) ? faster : cheaper);
            // The recommended unit's numbers come first in the reason.
            EXPECT_EQ(p.reason.rfind(unit_name(p.recommended), 0), 0u);
        }
    EXPECT_GT(speed, 50);
    EXPECT_EQ(energy, 5);  // M4 Max, the one chip with a power measurement

    // The example: Qwen3-0.6B on M4 Max, where the GPU is faster and takes fewer
    // joules per token, is not sent to the ANE "for power".
    const ChipPlan small = plan_chip(find_chip("M4 Max"), input("qwen3-0.6b", "lut4", 512));
    EXPECT_GT(small.gpu.decode_tps, small.ane.decode_tps);
    EXPECT_LT(small.gpu.energy_j, small.ane.energy_j);
    EXPECT_EQ(small.recommended, Unit::gpu);
    EXPECT_EQ(small.reason.find("1/10"), std::string::npos) << small.reason;
    // 8B on a Max: the GPU.
    const ChipPlan big = plan_chip(find_chip("M1 Max"), input("llama-3.1-8b", "lut4", 512));
    EXPECT_EQ(big.recommended, Unit::gpu);
    // Long context: the GPU, whatever the size.
    const ChipPlan long_ctx = plan_chip(find_chip("M4"), input("qwen3-0.6b", "lut4", 32768));
    EXPECT_EQ(long_ctx.recommended, Unit::gpu);
    EXPECT_EQ(long_ctx.basis, Basis::context);
    EXPECT_NE(long_ctx.reason.find("32768"), std::string::npos);
}

// A GPU decode step takes at least its kernels' dispatch floor per layer (and one for the
// head), however little it reads: a two-layer model is not decoded a million times a second.
// The floor is no lower than the fastest per-layer time published for a small model (MLX's
// Qwen3-0.6B on an M3 Ultra, 387.64 tok/s over 28 layers and the head).
TEST(PlanCost, TinyModelGpuDecodeIsBoundedByTheDispatchFloor) {
    constexpr double fastest_published_ms = 1e3 / 387.64 / 29;
    EXPECT_GE(gpu_layer_floor_ms, fastest_published_ms);
    for (const Chip& chip : chips()) {
        const PlanInput in = input("tiny-llama", "lut4", 512);
        const ChipPlan p = plan_chip(chip, in);
        SCOPED_TRACE(chip.name);
        const double layers = double(in.shape.n_layer + 1);
        EXPECT_LE(p.gpu.decode_tps, 1e3 / (layers * fastest_published_ms));
        EXPECT_NEAR(p.gpu.decode_tps, 1e3 / (layers * gpu_layer_floor_ms), 1e-6);
        if (p.gpu.prefill_tps > 0) {
            EXPECT_LE(p.gpu.prefill_tps, 512 * 1e3 / (layers * gpu_layer_floor_ms) + 1e-6);
        }
    }
    // Where the reads take longer than the floor, the floor is hidden behind them.
    const ChipPlan big = plan_chip(find_chip("M1 Max"), input("llama-3.1-8b", "lut4", 512));
    EXPECT_EQ(big.gpu.overhead_ms, 0);
    EXPECT_GT(big.gpu.weights_ms, 33 * gpu_layer_floor_ms);
}

// Hybrid: the prompt's KV (2 layers' worth of K and V per position, f16) read and
// written once; the time to first token the ANE's plus the hand-off; the GPU's decode.
TEST(PlanCost, HybridHandsTheKvOverAndDecodesOnTheGpu) {
    const PlanInput in = input("qwen3-0.6b", "lut4", 2048);
    const ChipPlan m1 = plan_chip(find_chip("M1"), in);
    const HybridSpeed& h = m1.hybrid;
    ASSERT_TRUE(h.available);
    // qwen3-0.6b: 28 layers, 8 KV heads of 128.
    const double kv = 2.0 * 28 * 8 * 128 * 2 * 2048;
    EXPECT_DOUBLE_EQ(h.handoff_bytes, kv);
    EXPECT_NEAR(h.handoff_ms, 2 * kv / (68.25e9 * 0.61) * 1e3, 1e-9);
    EXPECT_DOUBLE_EQ(h.ttft_ms, h.ane_ttft_ms + h.handoff_ms);
    EXPECT_DOUBLE_EQ(h.ane_ttft_ms, 2048 / m1.ane.prefill_tps * 1e3);
    EXPECT_DOUBLE_EQ(h.decode_tps, m1.gpu.decode_tps);
    // The GPU decodes faster here: the saved milliseconds per token pay for the hand-off.
    ASSERT_GT(m1.gpu.decode_tps, m1.ane.decode_tps);
    EXPECT_NEAR(h.beats_ane_after_tokens * (1e3 / m1.ane.decode_tps - 1e3 / m1.gpu.decode_tps),
                h.handoff_ms, 1e-9);
    EXPECT_EQ(h.beats_gpu_prompt, h.ttft_ms < h.gpu_ttft_ms);
    // A slower GPU decode than the ANE's never pays the hand-off back.
    Chip slow = find_chip("M1");
    slow.mem_gbps = 1;
    const ChipPlan s = plan_chip(slow, in);
    EXPECT_LT(s.hybrid.beats_ane_after_tokens, 0);
    // Without a GPU compute figure there is no prefill to compare: no hybrid.
    EXPECT_FALSE(plan_chip(find_chip("M6"), in).hybrid.available);
}

TEST(PlanCost, EnergyOnlyWhereMeasured) {
    const ChipPlan m4_max = plan_chip(find_chip("M4 Max"), input("qwen3-1.7b", "lut4", 512));
    EXPECT_GT(m4_max.ane.energy_j, 0);
    EXPECT_GT(m4_max.gpu.energy_j, 0);
    const ChipPlan m2 = plan_chip(find_chip("M2"), input("qwen3-1.7b", "lut4", 512));
    EXPECT_LT(m2.ane.energy_j, 0);
    EXPECT_LT(m2.gpu.energy_j, 0);
}

TEST(PlanCost, ChipNamesFoldCaseAndDashes) {
    EXPECT_EQ(find_chip("m4-max").name, "M4 Max");
    EXPECT_EQ(find_chip("A19PRO").name, "A19 Pro");
    EXPECT_EQ(select_chips("all").size(), chips().size());
}

// One line naming the bad argument, and the names that would do.
TEST(PlanCost, BadNamesAreOneLineErrors) {
    for (auto f : {+[] { find_chip("M9 Turbo"); }, +[] { resolve_model("qwen9-0.1b"); }}) {
        try {
            f();
            FAIL() << "no error";
        } catch (const Error& e) {
            const std::string what = e.what();
            EXPECT_EQ(what.find('\n'), std::string::npos) << what;
            EXPECT_TRUE(what.find("M9 Turbo") != std::string::npos ||
                        what.find("qwen9-0.1b") != std::string::npos)
                << what;
            EXPECT_NE(what.find("known:"), std::string::npos) << what;
        }
    }
}

// Gemma 4 E2B: the parameters the cost model counts are the synthetic
// model's, but for the norms and scalars; only the first 15 layers hold K/V
// (12 sliding within their window, 3 full of 512-wide heads).
TEST(PlanCost, Gemma4ShapeCountsSharedLayersAndPerLayerEmbeddings) {
    const SynthPreset preset = synth_preset("gemma-4-e2b");
    const ModelShape m = shape_from_spec(preset.spec, "gemma-4-e2b");
    EXPECT_NEAR(m.params() / double(synth_param_count(preset)), 1.0, 1e-4);
    EXPECT_NEAR(m.params() / 1e9, 4.63, 0.01);  // 2.35 B of them the per-layer table
    EXPECT_DOUBLE_EQ(m.kv_per_pos, 3 * 2 * 512);
    EXPECT_DOUBLE_EQ(m.kv_window_per_pos, 12 * 2 * 256);
    EXPECT_EQ(m.window, 512);
    EXPECT_EQ(kv_values_per_position(preset.spec), 3 * 2 * 512 + 12 * 2 * 256);
}

}  // namespace
}  // namespace anelm::plan
