#include "base/format_count.h"

#include <fmt/format.h>

namespace anelm {

std::string format_count(int64_t n) {
    const auto x = static_cast<double>(n);
    // The thresholds are where the smaller unit would round up to 1000.
    if (x >= 999.995e6) return fmt::format("{:.2f}B", x / 1e9);
    if (x >= 999.95e3) return fmt::format("{:.1f}M", x / 1e6);
    if (x >= 999.5) return fmt::format("{:.0f}K", x / 1e3);
    return fmt::format("{}", n);
}

}  // namespace anelm
