// Published measurements. [notes] = ../shared/docs/ane-llm-notes.txt, section in
// quotes; [anemll.md] = ../shared/docs/research/anemll.md, which quotes CoreML-LLM's
// README and docs and ANEMLL's issues; [peers-2026] = ../shared/docs/research/ane-peers-2026.md.
// Every tolerance is at most max_tolerance_pct (35%); a point the model misses stays in the
// table as a miss, with its reason in known_miss and docs/plan.md.
#include "analysis/plan_validate.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace anelm::plan {

const char* metric_name(Metric m) {
    switch (m) {
        case Metric::decode_tps:
            return "tok/s";
        case Metric::memory_mb:
            return "MB";
        case Metric::energy_j:
            return "J/token";
    }
    return "?";
}

namespace {

Precision bits(double embed, double ffn, double head, const char* label, double dequant = 0) {
    Precision p;
    p.embed_bits = embed;
    p.ffn_bits = ffn;
    p.head_bits = head;
    p.label = label;
    p.gpu_dequant_flops = dequant;
    return p;
}

// CoreML-LLM: 4-bit palettized layers, int4 group-32 head ([anemll.md] §9), int8 embedding
// table looked up on the CPU.
const Precision coreml_llm = bits(8, 4, 4.5, "4-bit LUT layers, int4 g32 head");
// CoreML-LLM's Qwen3.5 ships INT8-palettized, head included: "Never use INT4 for Qwen3.5 in
// any size we've tested; use INT8 or chunked INT8", "#120 INT8 palettized default"
// (CoreML-LLM docs/QWEN35_LESSONS.md sections 3.5 and 11; [peers-2026] section 4: "C says INT4
// is unsafe for this model"). A table of 256 f16 entries per tensor adds nothing measurable.
const Precision coreml_llm_int8 = bits(8, 8, 8, "CoreML-LLM INT8 palettized");
// MLX's 4-bit affine quantization: groups of 64 with a bf16 scale and bias each.
const Precision mlx_4bit = bits(4.5, 4.5, 4.5, "MLX 4-bit g64");
// [anemll.md] §8 issue 33: "MLX mixed 4/6-bit": 6-bit embeddings and head taken.
const Precision mlx_4_6 = bits(6.5, 4.5, 6.5, "MLX mixed 4/6-bit");
// MLX's 8-bit affine quantization, the same groups.
const Precision mlx_8bit = bits(8.5, 8.5, 8.5, "MLX 8-bit g64");
const Precision f16 = bits(16, 16, 16, "f16");
// Core ML's int4 with an f16 scale per block of 32 [notes] "Decide". Its GPU kernels expand
// the blocks at ~16.4 FLOPs per weight: the gap between this point and the f16 one on M1
// Max (29.7 ms against 17.9 ms of memory reads at 10.4 TFLOPS over 7.5 B weights).
const Precision coreml_int4_b32 = bits(4.5, 4.5, 4.5, "Core ML int4 block 32", 16.4);

PublishedPoint point(std::string name, std::string model, std::string chip, Unit unit, double value,
                     Precision p, int64_t n_ctx, std::string source) {
    PublishedPoint pt;
    pt.name = std::move(name);
    pt.model = std::move(model);
    pt.chip = std::move(chip);
    pt.unit = unit;
    pt.value = value;
    pt.precision = std::move(p);
    pt.n_ctx = n_ctx;
    pt.source = std::move(source);
    return pt;
}

std::vector<PublishedPoint> build_points() {
    const Precision lut4 =
        precision_from_spec(quant::parse_quant_spec("lut4"), resolve_model("qwen3-4b"));
    std::vector<PublishedPoint> out;
    auto add = [&](PublishedPoint p) -> PublishedPoint& { return out.emplace_back(std::move(p)); };

    const char* decide = "[notes] Decide";
    const char* qwen35_int8 = "CoreML-LLM docs/QWEN35_LESSONS.md 3.5 (INT8)";
    add(point("Qwen3.5 2B, ANE", "qwen3.5-2b", "M4 Max", Unit::ane, 35.0, coreml_llm_int8, 2048,
              std::string(decide) + "; " + qwen35_int8));
    add(point("Qwen3.5 2B, MLX-Swift", "qwen3.5-2b", "M4 Max", Unit::gpu, 291.9, mlx_4bit, 2048,
              decide));
    {
        auto& p = add(point("Qwen3.5 2B, MLX-Swift memory", "qwen3.5-2b", "M4 Max", Unit::gpu, 1223,
                            mlx_4bit, 2048, decide));
        p.metric = Metric::memory_mb;
    }
    for (auto [unit, joules, precision] :
         {std::tuple{Unit::ane, 0.48, coreml_llm}, std::tuple{Unit::gpu, 0.24, mlx_4bit}}) {
        auto& p =
            add(point(unit == Unit::ane ? "Gemma 4 E2B energy, ANE" : "Gemma 4 E2B energy, MLX",
                      "gemma-4-e2b", "M4 Max", unit, joules, precision, 2048, decide));
        p.metric = Metric::energy_j;
        p.ane_calls = 3;
        p.role = "sets M4 Max power";
    }
    {
        auto& p = add(point("Llama-3.1-8B Core ML, stateful KV", "llama-3.1-8b", "M1 Max",
                            Unit::gpu, 16.26, f16, 1024, decide));
        p.role = "sets GPU bandwidth efficiency";
    }
    {
        auto& p = add(point("Llama-3.1-8B Core ML, stateful KV + int4 block 32", "llama-3.1-8b",
                            "M1 Max", Unit::gpu, 33.67, coreml_int4_b32, 1024, decide));
        p.role = "sets Core ML int4 dequant cost";
    }
    {
        // Orion evaluates the whole model in one ANE request per token.
        auto& p = add(point("GPT-2 124M, Orion", "gpt2-124m", "M4 Max", Unit::ane, 170, f16, 1024,
                            "[notes] Bandwidth, SRAM, dispatch"));
        p.ane_calls = 1;
    }
    const char* coreml_llm_src = "[notes] Core ML compile errors; [anemll.md] 9";
    for (auto [name, value, calls] : {std::tuple{"Gemma 4 E2B, CoreML-LLM 3-chunk", 34.2, 3},
                                      std::tuple{"Gemma 4 E2B, CoreML-LLM 4-chunk", 31.6, 4},
                                      std::tuple{"Gemma 4 E2B, CoreML-LLM stateful", 31.0, 4}}) {
        auto& p = add(point(name, "gemma-4-e2b", "A19 Pro", Unit::ane, value, coreml_llm, 2048,
                            coreml_llm_src));
        p.ane_calls = calls;
    }
    add(point("Qwen3.5 2B, CoreML-LLM", "qwen3.5-2b", "A19 Pro", Unit::ane, 27, coreml_llm_int8,
              2048, std::string("[anemll.md] 9; ") + qwen35_int8));
    {
        // ANEMLL splits Qwen3-4B into 4 chunks ([notes] ANEMLL conversion): embeddings,
        // 4 chunks, head.
        auto& p = add(point("Qwen3-4B ANEMLL ctx 1024", "qwen3-4b", "M1", Unit::ane, 11, lut4, 1024,
                            "[anemll.md] 8, issue 33"));
        p.upper_bound = true;
        p.ane_calls = 6;
        p.known_miss =
            "M1 at 1K context, ANEMLL's worst case; nothing in the model is specific to M1's ANE "
            "(docs/plan.md, \"Misses\")";
    }
    add(point("Qwen3-4B MLX ctx 1024", "qwen3-4b", "M1", Unit::gpu, 23, mlx_4_6, 1024,
              "[anemll.md] 8, issue 33"));
    // Small models on the GPU, where the kernels' dispatch floor, not the reads, sets the
    // speed (gpu_layer_floor_ms). Rapid-MLX's community bench (mlx 0.31.2, one M3 Ultra, short
    // prompts; the context is not given, 512 is taken): the two smallest set the floor, the
    // 8B checks that the reads still decide for a large model on the same Mac.
    for (auto [name, model, value, source] :
         {std::tuple{"Qwen3-0.6B MLX 4-bit", "qwen3-0.6b", 387.64, "Rapid-MLX PR #633"},
          std::tuple{"Gemma 3 1B MLX 4-bit", "gemma-3-1b", 257.65, "Rapid-MLX PR #640"}}) {
        auto& p = add(point(name, model, "M3 Ultra", Unit::gpu, value, mlx_4bit, 512, source));
        p.role = "sets the GPU dispatch floor (geometric mean of the two)";
    }
    add(point("Llama-3.1-8B MLX 4-bit", "llama-3.1-8b", "M3 Ultra", Unit::gpu, 119.39, mlx_4bit,
              512, "Rapid-MLX PR #586"));
    // vllm-mlx on an M4 Pro: 3.52 ms a token, less than the 8-bit weights' reads plus the floor
    // (7.3 ms), so the dispatch overlaps the reads rather than adding to them. 11 prompt and
    // 256 generated tokens a run.
    add(point("Qwen3-0.6B vllm-mlx 8-bit", "qwen3-0.6b", "M4 Pro", Unit::gpu, 284.2, mlx_8bit, 256,
              "vllm-mlx issue #531"));
    return out;
}

}  // namespace

const std::vector<PublishedPoint>& published_points() {
    static const std::vector<PublishedPoint> table = build_points();
    return table;
}

PlanInput point_input(const PublishedPoint& p) {
    PlanInput in;
    in.shape = resolve_model(p.model);
    in.precision = p.precision;
    in.n_ctx = p.n_ctx;
    in.ane_calls = p.ane_calls;
    return in;
}

ValidationRow validate_point(const PublishedPoint& p) {
    const ChipPlan plan = plan_chip(find_chip(p.chip), point_input(p));
    const UnitSpeed& speed = p.unit == Unit::ane ? plan.ane : plan.gpu;
    ValidationRow r;
    r.point = p;
    switch (p.metric) {
        case Metric::decode_tps:
            r.predicted = speed.decode_tps;
            break;
        case Metric::memory_mb:
            r.predicted = plan.memory.total() / 1e6;
            break;
        case Metric::energy_j:
            r.predicted = speed.energy_j;
            break;
    }
    r.error_pct = (r.predicted - p.value) / p.value * 100;
    if (p.upper_bound && r.error_pct <= 0) r.error_pct = 0;
    r.bound_pct = std::min(p.tolerance_pct, max_tolerance_pct);
    r.within = std::abs(r.error_pct) <= r.bound_pct;
    return r;
}

std::vector<ValidationRow> validate() {
    std::vector<ValidationRow> rows;
    for (const PublishedPoint& p : published_points()) rows.push_back(validate_point(p));
    return rows;
}

int validation_misses(const std::vector<ValidationRow>& rows) {
    int n = 0;
    for (const ValidationRow& r : rows) n += !r.within;
    return n;
}

int validation_exit_code(const std::vector<ValidationRow>& rows) {
    return validation_misses(rows) > 0 ? 3 : 0;
}

}  // namespace anelm::plan
