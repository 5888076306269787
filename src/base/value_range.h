// A closed interval of accepted values, and the one message every check of one
// gives, whether a command-line flag or a field of a server request.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace anelm {

struct ValueRange {
    double lo, hi;

    bool contains(double v) const { return v >= lo && v <= hi; }  // NaN is outside
};

// "NAME: VALUE is outside [LO, HI]" (the name left out when empty).
inline std::string range_violation(std::string_view name, double value, ValueRange range) {
    return fmt::format("{}{}{} is outside [{}, {}]", name, name.empty() ? "" : ": ", value,
                       range.lo, range.hi);
}

}  // namespace anelm
