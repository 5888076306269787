// The Apple chips `anelm plan` predicts for: what each one's Neural Engine and
// GPU can read and compute, with the source of every number (docs/plan.md).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace anelm::plan {

struct Chip {
    std::string name;       // "M4 Max", "A19 Pro"
    double ane_gbps = 0;    // ANE weight-read bandwidth, GB/s; 0 = nothing published
    double mem_gbps = 0;    // unified memory bandwidth the GPU reads at, GB/s
    double gpu_tflops = 0;  // GPU f16 matmul peak, TFLOPS; 0 = nothing published
    double ane_tflops = 0;  // ANE f16 matmul throughput below the SRAM cliff, TFLOPS
    std::string source;     // where the numbers come from, for reports
};

// Every chip in the table, M1 to M6 then the A series.
const std::vector<Chip>& chips();

// A chip by name, ignoring case, spaces and dashes ("m4-max", "M4 Max").
// Throws Error listing the known names when there is none.
const Chip& find_chip(std::string_view name);

// "all" gives every chip; otherwise the one named.
std::vector<Chip> select_chips(std::string_view name);

}  // namespace anelm::plan
