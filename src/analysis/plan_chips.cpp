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
// RAM: the least memory of the cheapest device with the chip, from Apple's tech specs [apple]:
//   the Macs (the 40-core-GPU M3 Max and M4 Max the rows count start at 48 GB; M4 iPads with
//   8 GB are not counted), and the iPhone 15 Pro, 16 Pro and 17 Pro. The budget is the share of
//   it one app may wire (docs/plan.md, "Memory budget"):
//   Mac: Metal's default working set, 2/3 of RAM on the small Macs (5.3 of 8 GB, SceneWorks
//     PR #1552; 10.67 of 16 GB on an M4, exo PR #1672), 3/4 above 36 GB (gpustack issue
//     #1375; 107.5 of 128 GiB measured, antirez/ds4 PR #893, so 3/4 is the low side).
//   iPhone: the jetsam limit with the increased-memory-limit entitlement LLM apps ship
//     (pocketpal-ai PR #651): 6 of 8 GB on an iPhone 15 Pro (introlab/rtabmap PR
//     #1446), 6 of 8 and 12 of 16 GB on M1 iPads (utmapp/UTM issue #3982): 3/4.
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
    constexpr Platform mac = Platform::mac, iphone = Platform::iphone;
    return {
        // name, ANE GB/s [bench], memory GB/s [apple], GPU TFLOPS, ANE TFLOPS, source,
        // platform, least RAM GiB [apple]
        {"M1", 61, 68.25, 2.6, m1, "ANE [bench]; memory, GPU 2.6 TFLOPS, NE 11 TOPS [apple]", mac,
         8},
        {"M1 Pro", 55, 200, 5.2, m1, "ANE [bench]; 200 GB/s, 5.2 TFLOPS [apple]", mac, 16},
        {"M1 Max", 55, 400, 10.4, m1, "ANE [bench]; 400 GB/s, 10.4 TFLOPS [apple]", mac, 32},
        {"M1 Ultra", 55, 800, 21, m1, "ANE [bench]; 800 GB/s, 21 TFLOPS [apple]", mac, 64},
        {"M2", 60, 100, 3.6, m2, "ANE [bench]; 100 GB/s, 3.6 TFLOPS, NE 15.8 TOPS [apple]", mac, 8},
        {"M2 Pro", 62, 200, 6.8, m2, "ANE [bench]; 200 GB/s, 6.8 TFLOPS [apple]", mac, 16},
        {"M2 Max", 62, 400, 13.6, m2, "ANE [bench]; 400 GB/s, 13.6 TFLOPS [apple]", mac, 32},
        {"M2 Ultra", 62, 800, 27.2, m2, "ANE [bench]; 800 GB/s, 27.2 TFLOPS [apple]", mac, 64},
        {"M3", 63, 100, 10 * g, m3, "ANE [bench]; 100 GB/s, 10 GPU cores, NE 18 TOPS [apple]", mac,
         8},
        {"M3 Pro", 0, 150, 18 * g, m3, "no ANE bandwidth published; 150 GB/s, 18 cores [apple]",
         mac, 18},
        {"M3 Max", 120, 400, 40 * g, m3, "ANE [bench]; 400 GB/s, 40 cores [apple]", mac, 48},
        {"M3 Ultra", 120, 819, 80 * g, m3,
         "ANE: low end of 120-152 [notes]; 819 GB/s, 80 cores [apple]", mac, 96},
        {"M4", 64, 120, 10 * g, m4, "ANE [bench]; 120 GB/s, 10 cores, NE 38 TOPS [apple]", mac, 16},
        {"M4 Pro", 126, 273, 20 * g, m4, "ANE [bench]; 273 GB/s, 20 cores [apple]", mac, 24},
        {"M4 Max", 119, 546, 40 * g, m4, "ANE [bench]; 546 GB/s, 40 cores [apple]", mac, 48},
        {"M5", 70, 153, 4 * 10 * g, m4, "ANE [bench]; 153 GB/s, 4x M4 GPU compute [m5]", mac, 16},
        {"M5 Max", 148, 614, 0, m4, "ANE and 614 GB/s [bench]; no GPU compute published", mac, 0},
        {"M6", 152, 170, 0, m4, "ANE and 170 GB/s [bench]; no GPU compute published", mac, 0},
        // A series: no ANE bandwidth is published; the base M chip of the same generation's
        // figure is assumed (A17 Pro ~ M3, A18 Pro ~ M4, A19 Pro ~ M5). Memory bandwidth is
        // the LPDDR data rate times a 64-bit bus, not an Apple figure (docs/plan.md).
        {"A17 Pro", 63, 51.2, 6 * g, a17, "ANE assumed as M3; LPDDR5-6400 x 64 bit; 6 cores",
         iphone, 8},
        {"A18 Pro", 64, 60, 6 * g, a17, "ANE assumed as M4; LPDDR5X-7500 x 64 bit; 6 cores", iphone,
         8},
        {"A19 Pro", 70, 76.8, 0, a17, "ANE assumed as M5; LPDDR5X-9600 x 64 bit", iphone, 12},
    };
}

}  // namespace

double memory_budget_fraction(const Chip& chip) {
    if (chip.platform == Platform::iphone) return 3.0 / 4;
    return chip.ram_gib <= 36 ? 2.0 / 3 : 3.0 / 4;
}

double memory_budget_bytes(const Chip& chip) {
    constexpr double gib = 1024.0 * 1024 * 1024;
    return chip.ram_gib * gib * memory_budget_fraction(chip);
}

const Chip& smallest_budget_chip(Platform platform) {
    const Chip* best = nullptr;
    for (const Chip& c : chips())
        if (c.platform == platform && c.ram_gib > 0 &&
            (best == nullptr || memory_budget_bytes(c) < memory_budget_bytes(*best)))
            best = &c;
    if (best == nullptr) fail("plan: no chip of this platform has a RAM figure");
    return *best;
}

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
