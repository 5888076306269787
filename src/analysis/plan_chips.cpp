// The chip table. Sources, cited per column and per row:
//   [notes]  ../shared/docs/ane-llm-notes.txt
//   [bench]  ANEMLL-Bench README, ANE weight-read bandwidth per chip,
//            https://github.com/Anemll/anemll-bench (the notes' §"Bandwidth, SRAM, dispatch"
//            source)
//   [apple]  Apple's newsroom / tech-spec pages for each chip: unified memory bandwidth,
//            GPU core count, GPU TFLOPS (M1 and M2 families only), Neural Engine TOPS
//   [m5]     Apple's M5 announcement (Oct 2025): 153 GB/s, "over 4x peak GPU compute for AI vs M4"
// Derived columns (docs/plan.md, "Chips"):
//   gpu_tflops for M3/M4 = 0.358 TFLOPS per GPU core (M2 Max: 13.6 TFLOPS / 38 cores [apple])
//     times the core count [apple]; Apple publishes no TFLOPS for them.
//   ane_tflops = 5.7 TFLOPS (2048x2048 matmul below the SRAM cliff, M4-class ANE [notes]) scaled
//     by the chip's Neural Engine TOPS relative to M4 [apple]; from M4 and A17 Pro on Apple
//     quotes INT8 TOPS, halved here to compare with the f16 figures of M1-M3.
#include "analysis/plan_chips.h"

#include <fmt/ranges.h>

#include <cctype>

#include "base/error.h"

namespace anelm::plan {

namespace {

// Names compare without case, spaces, dashes or underscores.
std::string fold(std::string_view s) {
    std::string out;
    for (char c : s)
        if (c != ' ' && c != '-' && c != '_')
            out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

constexpr double gpu_tflops_per_core = 13.6 / 38;  // M2 Max [apple], for M3/M4 [derived]
constexpr double ane_m4_tflops = 5.7;              // [notes] SRAM: 2048^2 matmul
constexpr double ane_m4_tops_f16 = 38.0 / 2;       // M4: 38 INT8 TOPS [apple]

double ane_tflops(double tops_f16) {
    return ane_m4_tflops * tops_f16 / ane_m4_tops_f16;
}

std::vector<Chip> build_chips() {
    const double m1 = ane_tflops(11), m2 = ane_tflops(15.8), m3 = ane_tflops(18),
                 m4 = ane_tflops(19), a17 = ane_tflops(35.0 / 2);
    const double g = gpu_tflops_per_core;
    return {
        // name, ANE GB/s [bench], memory GB/s [apple], GPU TFLOPS, ANE TFLOPS
        {"M1", 61, 68.25, 2.6, m1, "ANE [bench]; memory, GPU 2.6 TFLOPS, NE 11 TOPS [apple]"},
        {"M1 Pro", 55, 200, 5.2, m1, "ANE [bench]; 200 GB/s, 5.2 TFLOPS [apple]"},
        {"M1 Max", 55, 400, 10.4, m1, "ANE [bench]; 400 GB/s, 10.4 TFLOPS [apple]"},
        {"M1 Ultra", 55, 800, 21, m1, "ANE [bench]; 800 GB/s, 21 TFLOPS [apple]"},
        {"M2", 60, 100, 3.6, m2, "ANE [bench]; 100 GB/s, 3.6 TFLOPS, NE 15.8 TOPS [apple]"},
        {"M2 Pro", 62, 200, 6.8, m2, "ANE [bench]; 200 GB/s, 6.8 TFLOPS [apple]"},
        {"M2 Max", 62, 400, 13.6, m2, "ANE [bench]; 400 GB/s, 13.6 TFLOPS [apple]"},
        {"M2 Ultra", 62, 800, 27.2, m2, "ANE [bench]; 800 GB/s, 27.2 TFLOPS [apple]"},
        {"M3", 63, 100, 10 * g, m3, "ANE [bench]; 100 GB/s, 10 GPU cores, NE 18 TOPS [apple]"},
        {"M3 Pro", 0, 150, 18 * g, m3, "no ANE bandwidth published; 150 GB/s, 18 cores [apple]"},
        {"M3 Max", 120, 400, 40 * g, m3, "ANE [bench]; 400 GB/s, 40 cores [apple]"},
        {"M3 Ultra", 120, 819, 80 * g, m3,
         "ANE: low end of 120-152 [notes]; 819 GB/s, 80 cores [apple]"},
        {"M4", 64, 120, 10 * g, m4, "ANE [bench]; 120 GB/s, 10 cores, NE 38 TOPS [apple]"},
        {"M4 Pro", 126, 273, 20 * g, m4, "ANE [bench]; 273 GB/s, 20 cores [apple]"},
        {"M4 Max", 119, 546, 40 * g, m4, "ANE [bench]; 546 GB/s, 40 cores [apple]"},
        {"M5", 70, 153, 4 * 10 * g, m4, "ANE [bench]; 153 GB/s, 4x M4 GPU compute [m5]"},
        {"M5 Max", 148, 614, 0, m4, "ANE and 614 GB/s [bench]; no GPU compute published"},
        {"M6", 152, 170, 0, m4, "ANE and 170 GB/s [bench]; no GPU compute published"},
        // A series: no ANE bandwidth is published; the base M chip of the same generation's
        // figure is assumed (A17 Pro ~ M3, A18 Pro ~ M4, A19 Pro ~ M5). Memory bandwidth is
        // the LPDDR data rate times a 64-bit bus, not an Apple figure (docs/plan.md).
        {"A17 Pro", 63, 51.2, 6 * g, a17, "ANE assumed as M3; LPDDR5-6400 x 64 bit; 6 cores"},
        {"A18 Pro", 64, 60, 6 * g, a17, "ANE assumed as M4; LPDDR5X-7500 x 64 bit; 6 cores"},
        {"A19 Pro", 70, 76.8, 0, a17, "ANE assumed as M5; LPDDR5X-9600 x 64 bit"},
    };
}

}  // namespace

const std::vector<Chip>& chips() {
    static const std::vector<Chip> table = build_chips();
    return table;
}

const Chip& find_chip(std::string_view name) {
    const std::string want = fold(name);
    for (const Chip& c : chips())
        if (fold(c.name) == want) return c;
    std::vector<std::string> names;
    for (const Chip& c : chips()) names.push_back(c.name);
    fail("plan: unknown chip '{}' (known: all, {})", name, fmt::join(names, ", "));
}

std::vector<Chip> select_chips(std::string_view name) {
    if (fold(name) == "all") return chips();
    return {find_chip(name)};
}

}  // namespace anelm::plan
