// The Apple chips `anelm plan` predicts for: what each one's Neural Engine and
// GPU can read and compute, with the source of every number (docs/plan.md).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace anelm::plan {

enum class Platform { mac, iphone };

struct Chip {
    std::string name;       // "M4 Max", "A19 Pro"
    double ane_gbps = 0;    // ANE weight-read bandwidth, GB/s; 0 = nothing published
    double mem_gbps = 0;    // unified memory bandwidth the GPU reads at, GB/s
    double gpu_tflops = 0;  // GPU f16 matmul peak, TFLOPS; 0 = nothing published
    double ane_tflops = 0;  // ANE f16 matmul throughput below the SRAM cliff, TFLOPS
    std::string source;     // where the numbers come from, for reports
    Platform platform = Platform::mac;
    // The least RAM, GiB, of a device this row describes: the cheapest Mac with the chip (with
    // the GPU the row counts), or the iPhone; 0 = not at hand.
    double ram_gib = 0;
};

// The bytes one app may have wired on the smallest device with this chip: the share of its
// RAM the system grants (docs/plan.md, "Memory budget"); 0 when the RAM is not at hand.
double memory_budget_bytes(const Chip& chip);
// The fraction of RAM that budget is: 2/3 or 3/4 on a Mac, 3/4 on an iPhone.
double memory_budget_fraction(const Chip& chip);

// The chip of the table with the smallest budget on a platform: the smallest device
// `anelm plan` knows for macOS (M1, 8 GB) or iOS (A17 Pro, 8 GB).
const Chip& smallest_budget_chip(Platform platform);

// Every chip in the table, M1 to M6 then the A series.
const std::vector<Chip>& chips();

// A chip by name, ignoring case, spaces and dashes ("m4-max", "M4 Max").
// Throws Error listing the known names when there is none.
const Chip& find_chip(std::string_view name);

// "all" gives every chip; otherwise the one named.
std::vector<Chip> select_chips(std::string_view name);

}  // namespace anelm::plan
