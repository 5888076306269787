#include "analysis/doctor_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "analysis/markup.h"
#include "base/output_check.h"
#include "passes/fp16_scale.h"

namespace anelm {

namespace {

constexpr double half_max = passes::f16_max;

std::string alpha_text(float alpha) {
    if (alpha >= 1) return fmt::format("{:g}", alpha);
    return fmt::format("1/{:g}", 1 / alpha);
}

std::string peak_text(double v) {
    if (std::isinf(v)) return "inf";
    return v >= 1e4 ? fmt::format("{:.0f}", v) : fmt::format("{:.4g}", v);
}

std::string percent(int64_t part, int64_t whole) {
    return whole > 0 ? fmt::format("{:.1f}%", 100.0 * double(part) / double(whole)) : "-";
}

std::vector<const ValuePeak*> flagged(const DoctorReport& r) {
    std::vector<const ValuePeak*> out;
    for (const ValuePeak& v : r.values)
        if (v.at_risk) out.push_back(&v);
    std::stable_sort(out.begin(), out.end(),
                     [](const ValuePeak* a, const ValuePeak* b) { return a->peak > b->peak; });
    return out;
}

// Values that lose over 1% of their nonzero entries to the ANE's flush of
// subnormal halves, most first.
std::vector<const ValuePeak*> subnormal_values(const DoctorReport& r) {
    std::vector<const ValuePeak*> out;
    for (const ValuePeak& v : r.values)
        if (v.subnormal > 0.01) out.push_back(&v);
    std::stable_sort(out.begin(), out.end(), [](const ValuePeak* a, const ValuePeak* b) {
        return a->subnormal > b->subnormal;
    });
    return out;
}

// The delta rules' hazards: the softplus input's reach and the state's
// subnormal share, as is and as the ANE lowering stores it.
std::string delta_rule_text(const DoctorReport& r) {
    const ValuePeak* reach = nullptr;
    double state = 0, boosted = 0, output = 0;
    for (const ValuePeak& v : r.values) {
        if (v.kind == "softplus_input" && (reach == nullptr || v.peak > reach->peak)) reach = &v;
        if (v.op == "gated_delta" && v.kind != "softplus_input" && v.kind != "recurrent_state")
            output = std::max(output, v.peak);
        if (v.kind != "recurrent_state") continue;
        double& share = v.name.ends_with("_boosted") ? boosted : state;
        share = std::max(share, v.subnormal);
    }
    if (reach == nullptr) return "";
    std::string out = fmt::format(
        "softplus       input reaches {:.3g} ({}){}\n", reach->peak, reach->name,
        reach->peak > 11 ? ": an fp16 softplus overflows above 11; convert writes the stable form"
                         : "");
    out += fmt::format(
        "delta state    up to {:.1f}% of a layer's state below half's smallest normal; {:.1f}% "
        "as convert stores it (times {:g})\n",
        100 * state, 100 * boosted, ir::delta_state_boost);
    const double inside = output * ir::delta_query_boost * ir::delta_state_boost;
    out += fmt::format("delta output   peak {}, {} inside the packages ({} FP16's 65,504)\n",
                       peak_text(output), peak_text(inside), inside > half_max ? "over" : "within");
    return out;
}

std::string divergence_text(const DeviceRun& run) {
    if (run.first_value.empty()) return "no value diverged";
    return fmt::format(
        "first diverges at {} ({}, layer {}, prompt {}): relative error {}", run.first_value,
        run.first_op, run.first_layer, run.first_prompt,
        std::isinf(run.first_error) ? "inf/NaN" : fmt::format("{:.3g}", run.first_error));
}

std::string device_line(const char* label, const DeviceRun& run) {
    return fmt::format(
        "{}: top-1 agreement {} ({}/{}), largest relative logit error {}{}", label,
        percent(run.top1_agree, run.tokens), run.top1_agree, run.tokens,
        std::isinf(run.max_logit_error) ? "inf" : fmt::format("{:.3g}", run.max_logit_error),
        run.non_finite ? ", logits not finite" : "");
}

nlohmann::ordered_json device_json(const DeviceRun& run) {
    nlohmann::ordered_json j;
    j["alpha"] = run.alpha;
    j["tokens"] = run.tokens;
    j["top1_agree"] = run.top1_agree;
    j["top1_agreement"] = run.tokens > 0 ? double(run.top1_agree) / double(run.tokens) : 0.0;
    j["max_logit_error"] = std::isinf(run.max_logit_error)
                               ? nlohmann::ordered_json(nullptr)
                               : nlohmann::ordered_json(run.max_logit_error);
    j["non_finite"] = run.non_finite;
    if (run.first_value.empty()) {
        j["first_divergence"] = nullptr;
    } else {
        j["first_divergence"] = {{"value", run.first_value},
                                 {"op", run.first_op},
                                 {"layer", run.first_layer},
                                 {"prompt", run.first_prompt},
                                 {"relative_error", std::isinf(run.first_error)
                                                        ? nlohmann::ordered_json(nullptr)
                                                        : nlohmann::ordered_json(run.first_error)}};
    }
    return j;
}

// Per-layer peaks on a log scale against FP16's limit.
std::string chart_svg(const DoctorReport& r) {
    constexpr double width = 880, height = 380, left = 70, right = 150, top = 20, bottom = 45;
    const double plot_w = width - left - right, plot_h = height - top - bottom;
    // The scale spans the smallest plotted peak (at most down to 1e-3) up to
    // past 65,504 or the largest peak.
    double hi = half_max * 2, lo = 1;
    for (const LayerPeaks& l : r.layers)
        for (double v : {l.residual, l.residual_scaled, l.attention_scores, l.mlp_hidden})
            if (std::isfinite(v) && v > 0) hi = std::max(hi, v), lo = std::min(lo, v);
    const double log_lo = std::max(-3.0, std::floor(std::log10(lo)));
    const double log_hi = std::ceil(std::log10(hi));
    const auto n = static_cast<double>(std::max<size_t>(1, r.layers.size() - 1));
    auto x_of = [&](double layer) {
        return left + plot_w * (r.layers.size() > 1 ? layer / n : 0.5);
    };
    auto y_of = [&](double v) {
        const double lv = v > 0 ? std::clamp(std::log10(v), log_lo, log_hi) : log_lo;
        return top + plot_h * (1 - (lv - log_lo) / (log_hi - log_lo));
    };

    std::string svg = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
        "{1}\" "
        "role=\"img\" aria-label=\"peak magnitude per layer\" font-family=\"sans-serif\" "
        "font-size=\"12\">\n",
        width, height);
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#ccc\"/>\n",
        left, top, plot_w, plot_h);
    for (double e = log_lo; e <= log_hi; e += 1) {
        const double y = y_of(std::pow(10.0, e));
        svg += fmt::format(
            "<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e4e4e4\"/>"
            "<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">1e{}</text>\n",
            left, left + plot_w, y, y, left - 6, y + 4, e);
    }
    const size_t step = std::max<size_t>(1, r.layers.size() / 16);
    for (size_t l = 0; l < r.layers.size(); l += step)
        svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                           x_of(double(l)), top + plot_h + 16, l);
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">layer</text>\n",
                       left + plot_w / 2, height - 8);

    auto limit = [&](double v, const char* colour, const char* dash, const char* label) {
        const double y = y_of(v);
        svg += fmt::format(
            "<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
            "stroke-width=\"2\" stroke-dasharray=\"{}\"/><text x=\"{}\" y=\"{:.1f}\" "
            "fill=\"{}\">{}</text>\n",
            left, left + plot_w, y, y, colour, dash, left + plot_w + 6, y + 4, colour, label);
    };
    limit(half_max, "#c62828", "0", "65,504 (FP16 max)");
    limit(half_max / 4, "#ef6c00", "6 4", "16,376 (at risk)");

    struct Series {
        const char* label;
        const char* colour;
        double LayerPeaks::*field;
        const char* dash;
    };
    const Series series[] = {
        {"residual, f32", "#1565c0", &LayerPeaks::residual, "0"},
        {"residual, scaled", "#2e7d32", &LayerPeaks::residual_scaled, "0"},
        {"MLP hidden", "#6a1b9a", &LayerPeaks::mlp_hidden, "5 3"},
        {"attention scores", "#00838f", &LayerPeaks::attention_scores, "2 3"},
    };
    double legend_y = top + 120;
    for (const Series& s : series) {
        std::string points;
        for (const LayerPeaks& l : r.layers)
            points += fmt::format("{:.1f},{:.1f} ", x_of(double(l.layer)), y_of(l.*s.field));
        svg += fmt::format(
            "<g class=\"series\" data-label=\"{}\"><polyline fill=\"none\" stroke=\"{}\" "
            "stroke-width=\"2\" stroke-dasharray=\"{}\" points=\"{}\"/>",
            s.label, s.colour, s.dash, points);
        for (const LayerPeaks& l : r.layers)
            svg += fmt::format(
                "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"><title>layer {}: "
                "{}</title></circle>",
                x_of(double(l.layer)), y_of(l.*s.field), s.colour, l.layer, peak_text(l.*s.field));
        svg += "</g>\n";
        svg += fmt::format(
            "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"{3}\" "
            "stroke-width=\"2\" stroke-dasharray=\"{4}\"/><text x=\"{5}\" "
            "y=\"{6:.1f}\">{7}</text>\n",
            left + plot_w + 6, left + plot_w + 26, legend_y, s.colour, s.dash, left + plot_w + 30,
            legend_y + 4, s.label);
        legend_y += 18;
    }
    svg += "</svg>\n";
    return svg;
}

}  // namespace

std::string doctor_text(const DoctorReport& r) {
    std::string out =
        fmt::format("model          {} ({}, {} layers)\n", r.model, r.architecture, r.n_layer);
    out += fmt::format("calibration    {} prompts, {} tokens, {:.1f} s\n", r.prompts.size(),
                       r.tokens, r.seconds);
    out += fmt::format("residual peak  {} ({} FP16's 65,504)\n", peak_text(r.residual_peak),
                       r.residual_peak > half_max ? "over" : "within");
    const auto flags = flagged(r);
    if (flags.empty()) {
        out += "flagged        none: every value stays below 16,376 (4x inside FP16's range)\n";
    } else {
        out += fmt::format("flagged        {} values (peak over 16,376):\n", flags.size());
        for (size_t i = 0; i < flags.size() && i < 12; ++i)
            out += fmt::format("  {:<8} {:<28} {:<16} {:>12}\n",
                               flags[i]->overflows ? "OVERFLOW" : "at risk", flags[i]->name,
                               flags[i]->kind, peak_text(flags[i]->peak));
        if (flags.size() > 12) out += fmt::format("  ... and {} more\n", flags.size() - 12);
    }
    out += delta_rule_text(r);
    const auto tiny = subnormal_values(r);
    if (!tiny.empty()) {
        out += fmt::format(
            "subnormal      {} values hold over 1% of their nonzero entries below 2^-14 (the ANE "
            "flushes them to 0):\n",
            tiny.size());
        for (size_t i = 0; i < tiny.size() && i < 8; ++i)
            out += fmt::format("  {:<28} {:<16} {:>6.1f}%\n", tiny[i]->name, tiny[i]->kind,
                               100 * tiny[i]->subnormal);
        if (tiny.size() > 8) out += fmt::format("  ... and {} more\n", tiny.size() - 8);
    }
    out += fmt::format("{} run        {}\n", r.device_precision, divergence_text(r.unscaled));
    out += "  " + device_line("unscaled", r.unscaled) + "\n";
    out += fmt::format("alpha          {} (target {:g})\n", alpha_text(r.alpha), r.target);
    out += "  " + device_line(fmt::format("scaled by {}", alpha_text(r.alpha)).c_str(), r.scaled) +
           "\n";
    return out;
}

nlohmann::ordered_json doctor_json(const DoctorReport& r) {
    nlohmann::ordered_json j;
    j["schema"] = "anelm.doctor/1";
    j["model"] = r.model;
    j["architecture"] = r.architecture;
    j["n_layer"] = r.n_layer;
    j["device_precision"] = r.device_precision;
    j["prompts"] = r.prompts;
    j["tokens"] = r.tokens;
    j["seconds"] = r.seconds;
    j["fp16_max"] = half_max;
    j["target"] = r.target;
    j["residual_peak"] = std::isinf(r.residual_peak) ? nlohmann::ordered_json(nullptr)
                                                     : nlohmann::ordered_json(r.residual_peak);
    j["alpha"] = r.alpha;
    j["unscaled"] = device_json(r.unscaled);
    j["scaled"] = device_json(r.scaled);
    auto& layers = j["layers"] = nlohmann::ordered_json::array();
    for (const LayerPeaks& l : r.layers)
        layers.push_back({{"layer", l.layer},
                          {"residual", l.residual},
                          {"norm_input", l.norm_input},
                          {"attention_scores", l.attention_scores},
                          {"mlp_hidden", l.mlp_hidden},
                          {"residual_scaled", l.residual_scaled},
                          {"all_scaled", l.all_scaled}});
    auto& values = j["values"] = nlohmann::ordered_json::array();
    for (const ValuePeak& v : r.values)
        values.push_back({{"name", v.name},
                          {"op", v.op},
                          {"kind", v.kind},
                          {"layer", v.layer},
                          {"peak", std::isinf(v.peak) ? nlohmann::ordered_json(nullptr)
                                                      : nlohmann::ordered_json(v.peak)},
                          {"subnormal", v.subnormal},
                          {"overflows", v.overflows},
                          {"at_risk", v.at_risk}});
    return j;
}

std::string doctor_html(const DoctorReport& r) {
    const auto flags = flagged(r);
    const bool fine = flags.empty() && r.unscaled.first_value.empty();
    std::string verdict =
        fine ? "Every value stays well inside FP16's range; no scaling is needed (&alpha; = 1)."
             : fmt::format(
                   "Peak residual {} &mdash; {} run: {}. With &alpha; = {}: top-1 agreement {}.",
                   peak_text(r.residual_peak), escape_markup(r.device_precision),
                   escape_markup(divergence_text(r.unscaled)), alpha_text(r.alpha),
                   percent(r.scaled.top1_agree, r.scaled.tokens));
    // The mark lets the next report replace this one and nothing else.
    std::string html = fmt::format("<!DOCTYPE html>\n{}\n", report_mark);
    html += fmt::format(
        "<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<title>anelm doctor: {0}</title>\n<style>\n"
        "body{{font-family:sans-serif;margin:24px;max-width:960px;color:#222}}\n"
        "h1{{font-size:22px}} .verdict{{padding:12px 16px;border-radius:6px;font-size:16px;"
        "background:{1};border:1px solid {2}}}\n"
        "table{{border-collapse:collapse;margin-top:12px}} td,th{{padding:4px "
        "10px;border-bottom:1px solid #ddd;"
        "text-align:left}} td.num{{text-align:right;font-variant-numeric:tabular-nums}}\n"
        ".over{{color:#c62828;font-weight:bold}} .risk{{color:#ef6c00}}\n"
        "</style></head><body>\n<h1>FP16 doctor: {0}</h1>\n"
        "<p>{3}, {4} layers &middot; {5} calibration prompts, {6} tokens &middot; device precision "
        "{7} "
        "&middot; {8:.1f} s</p>\n<p class=\"verdict\">{9}</p>\n",
        escape_markup(r.model), fine ? "#e8f5e9" : "#fff3e0", fine ? "#81c784" : "#ffb74d",
        escape_markup(r.architecture), r.n_layer, r.prompts.size(), r.tokens,
        escape_markup(r.device_precision), r.seconds, verdict);
    html += "<h2>Peak |value| per layer</h2>\n" + chart_svg(r);
    html +=
        "<h2>Device runs against f32</h2>\n<table><tr><th>run</th><th>&alpha;</th>"
        "<th>top-1 agreement</th><th>largest relative logit error</th><th>first "
        "divergence</th></tr>\n";
    for (const DeviceRun* run : {&r.unscaled, &r.scaled})
        html += fmt::format(
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{} ({}/{})</td>"
            "<td class=\"num\">{}</td><td>{}</td></tr>\n",
            run == &r.unscaled ? "unscaled" : "scaled", alpha_text(run->alpha),
            percent(run->top1_agree, run->tokens), run->top1_agree, run->tokens,
            std::isinf(run->max_logit_error) ? "inf" : fmt::format("{:.3g}", run->max_logit_error),
            run == &r.unscaled ? escape_markup(divergence_text(*run)) : "&mdash;");
    html += "</table>\n<h2>Flagged values</h2>\n";
    if (flags.empty()) {
        html += "<p>None: every named value peaks below 16,376.</p>\n";
    } else {
        html += "<table><tr><th>value</th><th>op</th><th>kind</th><th>peak</th><th></th></tr>\n";
        for (const ValuePeak* v : flags)
            html += fmt::format(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td>"
                "<td class=\"{}\">{}</td></tr>\n",
                escape_markup(v->name), v->op, v->kind, peak_text(v->peak),
                v->overflows ? "over" : "risk", v->overflows ? "over 65,504" : "within 4&times;");
        html += "</table>\n";
    }
    html += "</body></html>\n";
    return html;
}

}  // namespace anelm
