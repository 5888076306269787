// libFuzzer's entry: ANELM_FUZZ_TARGET names the reader (fuzz_targets.cpp).
// An input the reader refuses with anelm::Error is fine; anything else stops
// the run with the input saved (scripts/fuzz.sh).
#include <cstdio>
#include <cstdlib>

#include "base/error.h"
#include "fuzz_targets.h"

namespace {

const anelm::fuzz::Target* target() {
    static const anelm::fuzz::Target* t = [] {
        const char* name = std::getenv("ANELM_FUZZ_TARGET");
        const anelm::fuzz::Target* found = name ? anelm::fuzz::find_target(name) : nullptr;
        if (!found) {
            std::fprintf(stderr, "ANELM_FUZZ_TARGET: set it to one of:");
            for (const auto& each : anelm::fuzz::targets()) std::fprintf(stderr, " %s", each.name);
            std::fprintf(stderr, "\n");
            std::abort();
        }
        return found;
    }();
    return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        target()->run({data, size});
    } catch (const anelm::Error&) {
    }
    return 0;
}
