#include "base/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "test_support.h"

namespace anelm {
namespace {

std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

TEST(AtomicFile, ReplacesTheTargetAndLeavesNoTemporary) {
    const auto dir = test::temp_dir("atomic_file");
    const auto path = dir / "report.html";
    write_file_atomic(path.string(), "first");
    write_file_atomic(path.string(), "second, longer");
    EXPECT_EQ(slurp(path), "second, longer");
    int files = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++files;
    EXPECT_EQ(files, 1);
}

TEST(AtomicFile, MissingFolderIsAnErrorNamingThePath) {
    const auto path = test::temp_dir("atomic_file_missing") / "no" / "such" / "file.json";
    try {
        write_file_atomic(path.string(), "x");
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace anelm
