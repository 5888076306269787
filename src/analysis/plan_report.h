// `anelm plan` output: a text table, JSON, and an SVG bar chart per chip; the
// --validate table as text or JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/plan_cost.h"
#include "analysis/plan_validate.h"

namespace anelm::plan {

std::string plan_table(const PlanInput& in, const std::vector<ChipPlan>& plans);
nlohmann::ordered_json plan_json(const PlanInput& in, const std::vector<ChipPlan>& plans);

// Predicted decode tok/s, ANE beside GPU, one <g class="chip"> per chip.
std::string plan_svg(const PlanInput& in, const std::vector<ChipPlan>& plans);

std::string validation_table(const std::vector<ValidationRow>& rows);
nlohmann::ordered_json validation_json(const std::vector<ValidationRow>& rows);

}  // namespace anelm::plan
