// Every committed fuzz input (tests/fuzz/corpus/TARGET: seeds and every input
// that ever crashed a reader) goes through its reader again: read, or refused
// with anelm::Error, nothing else. Under the sanitized build this is also a
// memory check of each.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "base/error.h"
#include "fuzz_targets.h"

namespace anelm::fuzz {
namespace {

namespace fs = std::filesystem;

class Replay : public testing::TestWithParam<const char*> {};

TEST_P(Replay, EveryCorpusInputIsReadOrRefused) {
    const Target* target = find_target(GetParam());
    ASSERT_NE(target, nullptr);
    const fs::path dir = fs::path(ANELM_SOURCE_DIR) / "tests/fuzz/corpus" / GetParam();
    ASSERT_TRUE(fs::is_directory(dir)) << dir;
    int inputs = 0;
    for (const auto& entry : fs::directory_iterator(dir)) {
        std::ifstream in(entry.path(), std::ios::binary);
        const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
        SCOPED_TRACE(entry.path().string());
        try {
            target->run(bytes);
        } catch (const Error&) {
        }
        ++inputs;
    }
    EXPECT_GE(inputs, 1);
}

std::vector<const char*> names() {
    std::vector<const char*> out;
    for (const Target& t : targets()) out.push_back(t.name);
    return out;
}

INSTANTIATE_TEST_SUITE_P(Fuzz, Replay, testing::ValuesIn(names()),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace anelm::fuzz
