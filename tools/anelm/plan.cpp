// anelm plan: predicted decode and prefill speed, memory and energy of a model on
// each Apple chip's Neural Engine and GPU, and which to use; --validate checks the
// cost model against published measurements. The model is in docs/plan.md.
#include <fmt/core.h>

#include <filesystem>
#include <fstream>

#include "analysis/plan_cost.h"
#include "analysis/plan_report.h"
#include "analysis/plan_validate.h"
#include "anemll/meta_yaml.h"
#include "base/atomic_file.h"
#include "base/error.h"
#include "base/output_check.h"
#include "command.h"
#include "flag_checks.h"

namespace anelm::cli {
namespace {

struct PlanArgs {
    std::string model;
    std::string chip = "all";
    int64_t n_ctx = 512;
    std::string quant = "lut4";
    bool json = false;
    std::string svg;
    bool validate = false;
    bool ctx_given = false, quant_given = false;
};

// The quantization and context a model is planned at: a converted folder's
// own (meta.yaml's LUTs and per-matrix recipe, its context_length) unless the
// flags say otherwise.
void planned_precision(const PlanArgs& args, plan::PlanInput& in) {
    quant::QuantSpec spec = quant::parse_quant_spec(args.quant);
    const std::filesystem::path meta = std::filesystem::path(args.model) / "meta.yaml";
    if (std::filesystem::is_regular_file(meta)) {
        const anemll::MetaYaml m = anemll::read_meta_yaml(meta.string());
        if (!args.quant_given) {
            spec = quant::QuantSpec{};
            spec.embed = m.layout.lut_embed;
            spec.ffn = m.layout.lut_ffn;
            spec.head = m.layout.lut_head;
            spec.per_weight = m.quant_recipe;
        }
        if (!args.ctx_given) in.n_ctx = m.layout.context_length;
    }
    in.precision = plan::precision_from_spec(spec, in.shape);
}

int run_plan(const PlanArgs& args) {
    if (args.validate) {
        const auto rows = plan::validate();
        if (args.json)
            fmt::print("{}\n", plan::validation_json(rows).dump(2));
        else
            fmt::print("{}", plan::validation_table(rows));
        return plan::validation_exit_code(rows);  // 3 when a row misses its bound
    }
    if (args.model.empty()) fail("plan: a model path or preset is needed (or --validate)");
    if (args.n_ctx < 1) fail("plan: --ctx {}: expected a positive context length", args.n_ctx);
    if (!args.svg.empty()) check_output_file(args.svg, {args.model});

    plan::PlanInput in;
    in.shape = plan::resolve_model(args.model);
    in.n_ctx = args.n_ctx;
    planned_precision(args, in);
    std::vector<plan::ChipPlan> plans;
    for (const plan::Chip& chip : plan::select_chips(args.chip))
        plans.push_back(plan::plan_chip(chip, in));

    if (!args.svg.empty()) write_file_atomic(args.svg, plan::plan_svg(in, plans));
    if (args.json)
        fmt::print("{}\n", plan::plan_json(in, plans).dump(2));
    else
        fmt::print("{}", plan::plan_table(in, plans));
    return 0;
}

std::function<int()> setup(CLI::App& app) {
    auto args = std::make_shared<PlanArgs>();
    app.add_option("model", args->model,
                   "Hugging Face folder, GGUF file, llama2.c .bin, or synth preset");
    app.add_option("--chip", args->chip, "chip name (\"M4 Max\", m4-max) or all")
        ->capture_default_str();
    in_range(app.add_option("--ctx", args->n_ctx,
                            "context length the KV cache is sized for (a converted folder: its own)"),
             {1, 1 << 24})
        ->capture_default_str()
        ->each([args](const std::string&) { args->ctx_given = true; });
    app.add_option("--quant", args->quant,
                   "weight quantization spec (docs/quantization.md; a converted folder: its own "
                   "LUTs and widths per matrix)")
        ->capture_default_str()
        ->each([args](const std::string&) { args->quant_given = true; });
    app.add_flag("--json", args->json, "print JSON");
    app.add_option("--svg", args->svg, "also draw the chips' decode speeds to this SVG file");
    app.add_flag("--validate", args->validate,
                 "compare the cost model with every published measurement it can express; exit 3 "
                 "when a prediction misses its bound (35% at most)");
    return [args] { return run_plan(*args); };
}

const bool registered = register_command(
    {"plan", "Predict speed, memory and energy per Apple chip, ANE vs GPU", setup});

}  // namespace
}  // namespace anelm::cli
