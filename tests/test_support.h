// Helpers shared by the tests: where ../shared test data is, and skipping
// cleanly with a message when it is absent.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace anelm::test {

// The shared test data folder beside the source tree (or $ANELM_SHARED).
inline std::filesystem::path shared_dir() {
    if (const char* env = std::getenv("ANELM_SHARED")) return env;
    return std::filesystem::path(ANELM_SOURCE_DIR) / ".." / "shared";
}

inline std::filesystem::path shared_path(const std::string& rel) { return shared_dir() / rel; }

// A fresh temporary directory of this test process, removed when it exits.
inline std::filesystem::path temp_dir(const std::string& name) {
    struct RemovedAtExit {
        std::vector<std::filesystem::path> dirs;
        ~RemovedAtExit() {
            std::error_code ignored;
            for (const auto& dir : dirs) std::filesystem::remove_all(dir, ignored);
        }
    };
    static RemovedAtExit created;
    std::string flat = name;  // a parameterized test's name has slashes
    std::replace(flat.begin(), flat.end(), '/', '_');
    auto dir = std::filesystem::temp_directory_path() /
               ("anelm-test-" + flat + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    created.dirs.push_back(dir);
    return dir;
}

}  // namespace anelm::test

// Skips the current test when a ../shared file is missing.
#define ANELM_REQUIRE_SHARED(rel)                                                     \
    do {                                                                              \
        if (!std::filesystem::exists(::anelm::test::shared_path(rel)))                \
            GTEST_SKIP() << "shared test data absent: " << ::anelm::test::shared_path(rel); \
    } while (0)
