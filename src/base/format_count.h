// Counts of parameters in a unit that keeps them short.
#pragma once

#include <cstdint>
#include <string>

namespace anelm {

// 512, 260K, 15.2M, 1.54B: the unit is the largest that keeps the number at 1 or
// more once rounded.
std::string format_count(int64_t n);

}  // namespace anelm
