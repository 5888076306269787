#include "analysis/plan_report.h"

#include "analysis/markup.h"
#include "analysis/trained_context.h"
#include "base/output_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace anelm::plan {

namespace {

std::string num(double v, bool known) {
    if (!known || v <= 0) return "—";
    return tps_text(v);
}

std::string energy(double j) {
    return j < 0 ? "—" : joules_text(j);
}

// The chip's memory budget in GB, "!" when the ANE's loaded footprint exceeds it.
std::string budget(const ChipPlan& p) {
    if (p.memory_budget_bytes <= 0) return "—";
    return fmt::format("{:.1f}{}", p.memory_budget_bytes / 1e9, p.ane_fits() ? "" : "!");
}

nlohmann::ordered_json speed_json(const UnitSpeed& s) {
    nlohmann::ordered_json j;
    j["available"] = s.available;
    j["decode_tps"] = s.available ? nlohmann::ordered_json(s.decode_tps) : nullptr;
    j["prefill_tps"] = s.prefill_tps > 0 ? nlohmann::ordered_json(s.prefill_tps) : nullptr;
    j["energy_j_per_token"] = s.energy_j >= 0 ? nlohmann::ordered_json(s.energy_j) : nullptr;
    j["decode_ms"] = {{"weights", s.weights_ms}, {"kv", s.kv_ms}, {"overhead", s.overhead_ms}};
    return j;
}

std::string ms(double v) {
    return v >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.1f}", v);
}

// When the hybrid's total time beats each unit alone.
std::string hybrid_verdict(const HybridSpeed& h) {
    std::string ane = h.beats_ane_after_tokens < 0
                          ? "never beats the ANE (it decodes as fast)"
                          : fmt::format("beats the ANE past {:.0f} generated tokens",
                                        std::ceil(h.beats_ane_after_tokens));
    return ane + (h.beats_gpu_prompt ? "; its prompt beats the GPU's"
                                     : "; the GPU's own prompt is faster");
}

std::string hybrid_table(const PlanInput& in, const std::vector<ChipPlan>& plans) {
    std::string out = fmt::format(
        "\nhybrid: a {}-token prompt on the ANE, its {:.1f} MB of KV handed to the GPU, decode "
        "on the GPU (time to first token in ms)\n",
        in.n_ctx, plans.empty() ? 0.0 : plans[0].hybrid.handoff_bytes / 1e6);
    out += fmt::format("{:<9} {:>9} {:>9} {:>9} {:>9} {:>9}  {}\n", "chip", "ANE TTFT", "GPU TTFT",
                       "hyb TTFT", "hand-off", "hyb dec", "when hybrid wins");
    for (const ChipPlan& p : plans) {
        const HybridSpeed& h = p.hybrid;
        if (!h.available) {
            out += fmt::format("{:<9} {:>9} {:>9} {:>9} {:>9} {:>9}  —\n", p.chip.name, "—", "—",
                               "—", "—", "—");
            continue;
        }
        out += fmt::format("{:<9} {:>9} {:>9} {:>9} {:>9} {:>9}  {}\n", p.chip.name,
                           ms(h.ane_ttft_ms), ms(h.gpu_ttft_ms), ms(h.ttft_ms), ms(h.handoff_ms),
                           num(h.decode_tps, true), hybrid_verdict(h));
    }
    return out;
}

nlohmann::ordered_json hybrid_json(const HybridSpeed& h) {
    if (!h.available) return {{"available", false}};
    return {{"available", true},
            {"handoff_bytes", h.handoff_bytes},
            {"handoff_ms", h.handoff_ms},
            {"ttft_ms", h.ttft_ms},
            {"ane_ttft_ms", h.ane_ttft_ms},
            {"gpu_ttft_ms", h.gpu_ttft_ms},
            {"decode_tps", h.decode_tps},
            {"beats_ane_after_tokens", h.beats_ane_after_tokens < 0
                                           ? nlohmann::ordered_json(nullptr)
                                           : nlohmann::ordered_json(h.beats_ane_after_tokens)},
            {"beats_gpu_prompt", h.beats_gpu_prompt}};
}

}  // namespace

std::string plan_table(const PlanInput& in, const std::vector<ChipPlan>& plans) {
    const Footprint f = plans.empty() ? footprint(in) : plans[0].memory;
    std::string out = fmt::format(
        "model {} ({:.1f} M weights, {:.1f} M read per token), ctx {}, weights {}\n"
        "memory: {:.0f} MB weights + {:.0f} MB KV + {:.0f} MB runtime = {:.0f} MB (one copy: "
        "the GPU)\n"
        "ANE loaded: {:.2f} x ({:.0f} MB layers x {} functions + {:.0f} MB embeddings and LM "
        "head) + {:.0f} MB KV + {:.0f} MB runtime = {:.0f} MB (against each chip's budget)\n\n",
        in.shape.name, in.shape.params() / 1e6,
        (in.shape.layer_params + in.shape.head_params) / 1e6, in.n_ctx, in.precision.label,
        f.weights_bytes / 1e6, f.kv_bytes / 1e6, f.runtime_bytes / 1e6, f.total() / 1e6,
        ane_wired_per_function, f.ane_layer_bytes / 1e6, f.ane_functions, f.ane_other_bytes / 1e6,
        f.kv_bytes / 1e6, f.runtime_bytes / 1e6, f.ane_loaded() / 1e6);
    if (const std::string past = past_trained_context(in.n_ctx, in.shape.n_ctx_train);
        !past.empty())
        out.insert(out.size() - 1, fmt::format("warning: --ctx {}\n", past));
    out += fmt::format("{:<9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>7}  {}\n", "chip", "ANE dec",
                       "GPU dec", "ANE pre", "GPU pre", "ANE J", "GPU J", "budget", "use: reason");
    for (const ChipPlan& p : plans)
        out += fmt::format("{:<9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>7}  {}: {}\n", p.chip.name,
                           num(p.ane.decode_tps, p.ane.available),
                           num(p.gpu.decode_tps, p.gpu.available),
                           num(p.ane.prefill_tps, p.ane.available),
                           num(p.gpu.prefill_tps, p.gpu.available), energy(p.ane.energy_j),
                           energy(p.gpu.energy_j), budget(p), unit_name(p.recommended), p.reason);
    out +=
        "\ndecode and prefill in tokens/s; J = joules per decoded token; budget = GB an app may "
        "wire on the smallest device with the chip, ! = the ANE's loaded memory exceeds it; — = "
        "no published number to predict from\n";
    out += hybrid_table(in, plans);
    return out;
}

nlohmann::ordered_json plan_json(const PlanInput& in, const std::vector<ChipPlan>& plans) {
    nlohmann::ordered_json j;
    j["model"] = {
        {"name", in.shape.name},
        {"source", in.shape.source},
        {"params", in.shape.params()},
        {"params_read_per_token", in.shape.layer_params + in.shape.head_params},
        {"n_layer", in.shape.n_layer},
        {"n_ctx_train",
         in.shape.n_ctx_train > 0 ? nlohmann::ordered_json(in.shape.n_ctx_train) : nullptr}};
    j["n_ctx"] = in.n_ctx;
    const std::string past = past_trained_context(in.n_ctx, in.shape.n_ctx_train);
    j["n_ctx_warning"] =
        past.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json("--ctx " + past);
    j["precision"] = {{"label", in.precision.label},
                      {"embed_bits", in.precision.embed_bits},
                      {"ffn_bits", in.precision.ffn_bits},
                      {"head_bits", in.precision.head_bits}};
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const ChipPlan& p : plans) {
        nlohmann::ordered_json c;
        c["chip"] = p.chip.name;
        c["ane"] = speed_json(p.ane);
        c["gpu"] = speed_json(p.gpu);
        c["hybrid"] = hybrid_json(p.hybrid);
        const bool known = p.memory_budget_bytes > 0;
        auto or_null = [&](auto v) { return known ? nlohmann::ordered_json(v) : nullptr; };
        c["memory"] = {{"weights_bytes", p.memory.weights_bytes},
                       {"kv_bytes", p.memory.kv_bytes},
                       {"runtime_bytes", p.memory.runtime_bytes},
                       {"total_bytes", p.memory.total()},
                       {"ane_functions", p.memory.ane_functions},
                       {"ane_wired_per_function", ane_wired_per_function},
                       {"ane_layer_weights_bytes", p.memory.ane_layer_bytes},
                       {"ane_other_weights_bytes", p.memory.ane_other_bytes},
                       {"ane_loaded_bytes", p.memory.ane_loaded()},
                       {"ram_gib", or_null(p.chip.ram_gib)},
                       {"budget_bytes", or_null(p.memory_budget_bytes)},
                       {"ane_fits", or_null(p.ane_fits())},
                       {"gpu_fits", or_null(p.gpu_fits())}};
        c["recommendation"] = {{"unit", unit_name(p.recommended)},
                               {"basis", basis_name(p.basis)},
                               {"reason", p.reason}};
        c["source"] = p.chip.source;
        list.push_back(std::move(c));
    }
    j["chips"] = std::move(list);
    return j;
}

std::string plan_svg(const PlanInput& in, const std::vector<ChipPlan>& plans) {
    constexpr double bar_w = 16, group_w = 48, left = 50, top = 40, plot_h = 220;
    double top_tps = 1;
    for (const ChipPlan& p : plans)
        top_tps = std::max({top_tps, p.ane.decode_tps, p.gpu.decode_tps});
    // Wide enough for the title even with one chip.
    const double width = std::max(left + group_w * plans.size() + 20, 460.0);
    const double height = top + plot_h + 60;
    std::string out = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
        "font-family=\"sans-serif\" font-size=\"10\">\n{}\n"
        "<title>{} predicted decode tok/s, ctx {}, {}</title>\n"
        "<text x=\"{}\" y=\"16\" font-size=\"13\">{}: predicted decode tok/s (ctx {}, {})</text>\n"
        "<rect x=\"{}\" y=\"22\" width=\"10\" height=\"10\" fill=\"#2a7ab8\"/>"
        "<text x=\"{}\" y=\"31\">ANE</text>\n"
        "<rect x=\"{}\" y=\"22\" width=\"10\" height=\"10\" fill=\"#d9822b\"/>"
        "<text x=\"{}\" y=\"31\">GPU</text>\n"
        "<line x1=\"{}\" y1=\"{}\" x2=\"{:.0f}\" y2=\"{}\" stroke=\"#444\"/>\n"
        "<text x=\"4\" y=\"{}\">{:.0f}</text>\n",
        width, height, report_mark, escape_markup(in.shape.name), in.n_ctx,
        escape_markup(in.precision.label), left, escape_markup(in.shape.name), in.n_ctx,
        escape_markup(in.precision.label), left, left + 14, left + 50, left + 64, left,
        top + plot_h, width - 10, top + plot_h, top + 8, top_tps);
    for (size_t i = 0; i < plans.size(); ++i) {
        const ChipPlan& p = plans[i];
        const double x = left + group_w * i + 6;
        out += fmt::format("<g class=\"chip\" data-chip=\"{}\">\n", escape_markup(p.chip.name));
        int k = 0;
        for (auto [speed, color] : {std::pair{&p.ane, "#2a7ab8"}, std::pair{&p.gpu, "#d9822b"}}) {
            const double v = speed->available ? speed->decode_tps : 0;
            const double h = plot_h * v / top_tps;
            out += fmt::format(
                "<rect class=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" "
                "fill=\"{}\"><title>{} {}: {}</title></rect>\n",
                k == 0 ? "ane" : "gpu", x + k * bar_w, top + plot_h - h, bar_w, h, color,
                escape_markup(p.chip.name), k == 0 ? "ANE" : "GPU", num(v, speed->available));
            ++k;
        }
        out += fmt::format(
            "<text x=\"{:.1f}\" y=\"{}\" transform=\"rotate(45 {:.1f} {})\">{}</text>\n</g>\n", x,
            top + plot_h + 12, x, top + plot_h + 12, escape_markup(p.chip.name));
    }
    out += "</svg>\n";
    return out;
}

std::string validation_table(const std::vector<ValidationRow>& rows) {
    std::string out =
        fmt::format("{:<50} {:<8} {:<4} {:>10} {:>10} {:>8} {:>6}  {}\n", "case", "chip", "unit",
                    "published", "predicted", "error", "bound", "role / source");
    std::vector<std::string> misses;
    for (const ValidationRow& r : rows) {
        const PublishedPoint& p = r.point;
        const std::string published =
            fmt::format("{}{:g} {}", p.upper_bound ? "<=" : "", p.value, metric_name(p.metric));
        out += fmt::format("{:<50} {:<8} {:<4} {:>10} {:>10.4g} {:>+7.1f}% {:>5.0f}%  {}{}; {}\n",
                           p.name, p.chip, unit_name(p.unit), published, r.predicted, r.error_pct,
                           r.bound_pct, r.within ? "" : "MISS: ", p.role, p.source);
        if (!r.within)
            misses.push_back(fmt::format("{} on {}: predicted {:.4g} for {}{}", p.name, p.chip,
                                         r.predicted, published,
                                         p.known_miss.empty() ? "" : " (" + p.known_miss + ")"));
    }
    out += fmt::format("\n{} points, {} outside their bound (at most {:.0f}%)\n", rows.size(),
                       misses.size(), max_tolerance_pct);
    for (const std::string& m : misses) out += "miss: " + m + "\n";
    return out;
}

nlohmann::ordered_json validation_json(const std::vector<ValidationRow>& rows) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const ValidationRow& r : rows) {
        const PublishedPoint& p = r.point;
        list.push_back({{"case", p.name},
                        {"model", p.model},
                        {"chip", p.chip},
                        {"unit", unit_name(p.unit)},
                        {"metric", metric_name(p.metric)},
                        {"published", p.value},
                        {"upper_bound", p.upper_bound},
                        {"predicted", r.predicted},
                        {"error_pct", r.error_pct},
                        {"tolerance_pct", r.bound_pct},
                        {"within", r.within},
                        {"miss", !r.within},
                        {"known_miss", p.known_miss},
                        {"role", p.role},
                        {"source", p.source}});
    }
    return list;
}

}  // namespace anelm::plan
