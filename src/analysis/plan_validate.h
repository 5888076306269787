// The published measurements `anelm plan --validate` checks the cost model
// against, each with the setup it was measured in and its source.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/plan_cost.h"

namespace anelm::plan {

enum class Metric { decode_tps, memory_mb, energy_j };
const char* metric_name(Metric m);

struct PublishedPoint {
    std::string name;   // what was measured, as the source says it
    std::string model;  // a synth preset or known shape (resolve_model)
    std::string chip;
    Unit unit = Unit::ane;
    Metric metric = Metric::decode_tps;
    double value = 0;
    Precision precision;
    int64_t n_ctx = 512;
    int ane_calls = 0;           // Core ML predictions per token; 0: ANEMLL's layout
    bool upper_bound = false;    // the source gives a ceiling ("<= 11 tok/s")
    double tolerance_pct = 35;   // never wider than max_tolerance_pct
    std::string role = "check";  // or what constant the point sets ("sets ...")
    std::string source;
    // Why the model misses this point, as docs/plan.md explains it; empty: expected within.
    // A known miss is still reported as a miss.
    std::string known_miss;
};

// No point's bound is wider than this: a prediction further off is a miss.
inline constexpr double max_tolerance_pct = 35;

struct ValidationRow {
    PublishedPoint point;
    double predicted = 0;
    double error_pct = 0;  // (predicted - published) / published; 0 for a met ceiling
    double bound_pct = 0;  // the point's tolerance, capped at max_tolerance_pct
    bool within = false;   // false: a miss
};

// Every published measurement the model can express (docs/plan.md lists the others).
const std::vector<PublishedPoint>& published_points();

PlanInput point_input(const PublishedPoint& p);
ValidationRow validate_point(const PublishedPoint& p);
std::vector<ValidationRow> validate();

int validation_misses(const std::vector<ValidationRow>& rows);
// Exit status of `anelm plan --validate`: 0 when every row is within its bound, 3 when a row
// misses (1 stays for errors, as for every command).
int validation_exit_code(const std::vector<ValidationRow>& rows);

}  // namespace anelm::plan
