// The doctor's findings as text for the terminal, JSON (schema in
// docs/doctor.md) and a self-contained HTML page with an inline SVG chart.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/doctor.h"

namespace anelm {

std::string doctor_text(const DoctorReport& report);
nlohmann::ordered_json doctor_json(const DoctorReport& report);
std::string doctor_html(const DoctorReport& report);

}  // namespace anelm
