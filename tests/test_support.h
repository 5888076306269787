// Helpers shared by the tests: where ../shared test data is, and skipping
// cleanly with a message when it is absent.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace anelm::test {

// The shared test data folder beside the source tree (or $ANELM_SHARED).
inline std::filesystem::path shared_dir() {
    if (const char* env = std::getenv("ANELM_SHARED")) return env;
    return std::filesystem::path(ANELM_SOURCE_DIR) / ".." / "shared";
}

inline std::filesystem::path shared_path(const std::string& rel) { return shared_dir() / rel; }

// A fresh temporary directory, removed by the caller's fixture if it wishes.
inline std::filesystem::path temp_dir(const std::string& name) {
    auto dir = std::filesystem::temp_directory_path() /
               ("anelm-test-" + name + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

}  // namespace anelm::test

// Skips the current test when a ../shared file is missing.
#define ANELM_REQUIRE_SHARED(rel)                                                     \
    do {                                                                              \
        if (!std::filesystem::exists(::anelm::test::shared_path(rel)))                \
            GTEST_SKIP() << "shared test data absent: " << ::anelm::test::shared_path(rel); \
    } while (0)
