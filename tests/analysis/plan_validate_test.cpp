// `anelm plan --validate`: the cost model's constants against every published
// measurement it expresses, and the reports (JSON fields, SVG structure).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "analysis/plan_report.h"
#include "analysis/plan_validate.h"

namespace anelm::plan {
namespace {

PublishedPoint point_named(const std::string& name) {
    for (const PublishedPoint& p : published_points())
        if (p.name == name) return p;
    ADD_FAILURE() << "no point " << name;
    return published_points().front();
}

// Every point is within its bound except the misses docs/plan.md explains ("Misses"); a new
// miss, or a known one the model comes to meet, fails here.
TEST(PlanValidate, EveryPublishedPointIsWithinItsBoundOrAKnownMiss) {
    const std::vector<ValidationRow> rows = validate();
    ASSERT_EQ(rows.size(), published_points().size());
    ASSERT_GE(rows.size(), 10u);
    int known = 0;
    for (const ValidationRow& r : rows) {
        SCOPED_TRACE(r.point.name + " on " + r.point.chip);
        EXPECT_GT(r.predicted, 0);
        EXPECT_EQ(r.within, r.point.known_miss.empty())
            << "predicted " << r.predicted << ", published " << r.point.value << ", error "
            << r.error_pct << "%";
        EXPECT_FALSE(r.point.source.empty());
        known += !r.point.known_miss.empty();
    }
    EXPECT_EQ(known, 1);  // Qwen3-4B on M1's ANE
    EXPECT_EQ(validation_misses(rows), known);
    EXPECT_EQ(validation_exit_code(rows), 3);
}

// No row's bound is wider than 35%, whatever a point asks for.
TEST(PlanValidate, NoBoundIsWiderThan35Percent) {
    EXPECT_EQ(max_tolerance_pct, 35);
    for (const PublishedPoint& p : published_points()) EXPECT_LE(p.tolerance_pct, 35) << p.name;
    for (const ValidationRow& r : validate()) {
        EXPECT_LE(r.bound_pct, 35) << r.point.name;
        EXPECT_EQ(r.within, std::abs(r.error_pct) <= r.bound_pct) << r.point.name;
    }
    // A point that asks for 70% and is 50% off is a miss.
    PublishedPoint wide = point_named("Qwen3.5 2B, MLX-Swift");
    wide.tolerance_pct = 70;
    wide.value = validate_point(wide).predicted / 1.5;
    const ValidationRow r = validate_point(wide);
    EXPECT_NEAR(r.error_pct, 50, 1e-9);
    EXPECT_EQ(r.bound_pct, 35);
    EXPECT_FALSE(r.within);
}

// A prediction outside its bound is reported as a miss: in the row, the table's line and
// summary, the JSON, and the exit status.
TEST(PlanValidate, AMissIsReportedAsAMiss) {
    std::vector<ValidationRow> rows;
    for (const ValidationRow& r : validate())
        if (r.within) rows.push_back(r);
    ASSERT_FALSE(rows.empty());
    EXPECT_EQ(validation_misses(rows), 0);
    EXPECT_EQ(validation_exit_code(rows), 0);
    EXPECT_NE(validation_table(rows).find(" 0 outside their bound"), std::string::npos);
    EXPECT_EQ(validation_table(rows).find("MISS"), std::string::npos);

    PublishedPoint off = point_named("Qwen3.5 2B, MLX-Swift");
    off.value = validate_point(off).predicted / 2;  // predicted twice the published
    const ValidationRow miss = validate_point(off);
    EXPECT_NEAR(miss.error_pct, 100, 1e-9);
    EXPECT_FALSE(miss.within);
    rows.push_back(miss);
    EXPECT_EQ(validation_misses(rows), 1);
    EXPECT_EQ(validation_exit_code(rows), 3);
    const std::string table = validation_table(rows);
    EXPECT_NE(table.find("MISS: check"), std::string::npos) << table;
    EXPECT_NE(table.find(" 1 outside their bound (at most 35%)"), std::string::npos) << table;
    EXPECT_NE(table.find("miss: Qwen3.5 2B, MLX-Swift on M4 Max"), std::string::npos) << table;
    const auto j = validation_json(rows);
    EXPECT_EQ(j.back()["miss"], true);
    EXPECT_EQ(j.back()["within"], false);
    EXPECT_EQ(j.front()["miss"], false);
}

// The precision the Qwen3.5 rows assume is CoreML-LLM's shipped INT8, not 4-bit.
TEST(PlanValidate, Qwen35OnTheAneIsInt8) {
    for (const PublishedPoint& p : published_points())
        if (p.model == "qwen3.5-2b" && p.unit == Unit::ane) {
            EXPECT_EQ(p.precision.ffn_bits, 8) << p.name;
            EXPECT_EQ(p.precision.head_bits, 8) << p.name;
        }
}

TEST(PlanValidate, TheIssuesExamplesAreChecked) {
    auto has = [](const std::string& chip, Unit unit, double value) {
        for (const PublishedPoint& p : published_points())
            if (p.chip == chip && p.unit == unit && p.value == value) return true;
        return false;
    };
    EXPECT_TRUE(has("M4 Max", Unit::ane, 35.0));   // Qwen3.5 2B
    EXPECT_TRUE(has("M4 Max", Unit::gpu, 291.9));  // Qwen3.5 2B, MLX
    EXPECT_TRUE(has("M1 Max", Unit::gpu, 33.67));  // Llama-3.1-8B int4 block 32
    EXPECT_TRUE(has("M4 Max", Unit::ane, 170));    // GPT-2 124M
    EXPECT_TRUE(has("A19 Pro", Unit::ane, 34.2));  // Gemma 4 E2B
}

TEST(PlanValidate, AMetCeilingHasNoError) {
    for (const ValidationRow& r : validate()) {
        if (r.point.upper_bound && r.predicted <= r.point.value) {
            EXPECT_EQ(r.error_pct, 0);
        }
    }
}

TEST(PlanReport, JsonHasEveryField) {
    PlanInput in;
    in.shape = resolve_model("qwen3-1.7b");
    in.precision = precision_from_spec(quant::parse_quant_spec("lut4"), in.shape);
    std::vector<ChipPlan> plans;
    for (const Chip& chip : chips()) plans.push_back(plan_chip(chip, in));
    const auto j = plan_json(in, plans);
    EXPECT_EQ(j["model"]["name"], "qwen3-1.7b");
    EXPECT_EQ(j["n_ctx"], 512);
    EXPECT_TRUE(j["precision"].contains("ffn_bits"));
    ASSERT_EQ(j["chips"].size(), chips().size());
    for (const auto& c : j["chips"]) {
        for (const char* unit : {"ane", "gpu"})
            for (const char* key :
                 {"available", "decode_tps", "prefill_tps", "energy_j_per_token", "decode_ms"})
                EXPECT_TRUE(c[unit].contains(key)) << c["chip"] << " " << unit << " " << key;
        for (const char* key :
             {"weights_bytes", "kv_bytes", "runtime_bytes", "total_bytes", "ane_functions",
              "ane_wired_per_function", "ane_layer_weights_bytes", "ane_other_weights_bytes",
              "ane_loaded_bytes", "ram_gib", "budget_bytes", "ane_fits", "gpu_fits"})
            EXPECT_TRUE(c["memory"].contains(key)) << key;
        EXPECT_TRUE(c["recommendation"]["unit"] == "ANE" || c["recommendation"]["unit"] == "GPU");
        EXPECT_FALSE(c["recommendation"]["reason"].get<std::string>().empty());
        EXPECT_TRUE(c["gpu"]["decode_tps"].is_number());
    }
    const auto v = validation_json(validate());
    for (const auto& row : v)
        for (const char* key : {"case", "chip", "unit", "published", "predicted", "error_pct",
                                "tolerance_pct", "within", "miss", "known_miss"})
            EXPECT_TRUE(row.contains(key)) << key;
}

// A small well-formedness check: every tag closes in order, attributes are quoted,
// no stray '&' or '<'; comments (the report's written-by-anelm mark) are skipped.
bool well_formed(const std::string& xml, std::string& why) {
    std::vector<std::string> open;
    size_t i = 0;
    while (i < xml.size()) {
        if (xml.compare(i, 4, "<!--") == 0) {
            const size_t end = xml.find("-->", i + 4);
            if (end == std::string::npos) return why = "unclosed comment", false;
            i = end + 3;
            continue;
        }
        if (xml[i] == '&') {
            const size_t semi = xml.find(';', i);
            if (semi == std::string::npos || semi - i > 6) return why = "bare &", false;
            i = semi + 1;
            continue;
        }
        if (xml[i] != '<') {
            ++i;
            continue;
        }
        const size_t end = xml.find('>', i);
        if (end == std::string::npos) return why = "unclosed <", false;
        std::string tag = xml.substr(i + 1, end - i - 1);
        if (tag.find('<') != std::string::npos) return why = "< inside a tag", false;
        size_t quotes = 0;
        for (char c : tag) quotes += c == '"';
        if (quotes % 2) return why = "unbalanced quotes in <" + tag + ">", false;
        if (tag[0] == '/') {
            if (open.empty() || open.back() != tag.substr(1))
                return why = "</" + tag.substr(1) + "> closes nothing open", false;
            open.pop_back();
        } else if (tag.back() != '/') {
            open.push_back(tag.substr(0, tag.find_first_of(" \n")));
        }
        i = end + 1;
    }
    if (!open.empty()) return why = "<" + open.back() + "> never closed", false;
    return true;
}

TEST(PlanReport, SvgIsWellFormedWithOneGroupPerChip) {
    PlanInput in;
    in.shape = resolve_model("gemma-4-e2b");  // a name with a dash, labels with '<' in none
    in.precision = precision_from_spec(quant::parse_quant_spec("lut4,head=8"), in.shape);
    std::vector<ChipPlan> plans;
    for (const Chip& chip : chips()) plans.push_back(plan_chip(chip, in));
    const std::string svg = plan_svg(in, plans);
    std::string why;
    EXPECT_TRUE(well_formed(svg, why)) << why;
    EXPECT_EQ(svg.rfind("<svg", 0), 0u);
    size_t groups = 0, bars = 0;
    for (size_t at = svg.find("<g class=\"chip\""); at != std::string::npos;
         at = svg.find("<g class=\"chip\"", at + 1))
        ++groups;
    for (size_t at = svg.find("<rect class=\""); at != std::string::npos;
         at = svg.find("<rect class=\"", at + 1))
        ++bars;
    EXPECT_EQ(groups, chips().size());
    EXPECT_EQ(bars, 2 * chips().size());
    for (const Chip& chip : chips())
        EXPECT_NE(svg.find("data-chip=\"" + chip.name + "\""), std::string::npos) << chip.name;
}

TEST(PlanReport, SvgCheckerCatchesBrokenXml) {
    std::string why;
    EXPECT_FALSE(well_formed("<svg><g></svg>", why));
    EXPECT_FALSE(well_formed("<svg><!-- a </svg>", why));
    EXPECT_TRUE(well_formed("<svg><!-- a <b> --></svg>", why)) << why;
    EXPECT_FALSE(well_formed("<svg>a & b</svg>", why));
    EXPECT_TRUE(well_formed("<svg><g a=\"1\"><rect/></g></svg>", why));
}

}  // namespace
}  // namespace anelm::plan
