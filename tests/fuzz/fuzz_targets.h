// The readers of outside input, each as a function of raw bytes that either
// reads them or throws anelm::Error: what libFuzzer drives (fuzz_main.cpp,
// scripts/fuzz.sh) and what the suite replays on the committed corpus
// (replay_test.cpp). Anything else (a crash, another exception, a sanitizer
// report) is a bug.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace anelm::fuzz {

struct Target {
    const char* name;  // also the corpus folder: tests/fuzz/corpus/NAME
    void (*run)(std::span<const uint8_t> bytes);
};

std::span<const Target> targets();
const Target* find_target(std::string_view name);

}  // namespace anelm::fuzz
