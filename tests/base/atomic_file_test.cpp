#include "base/atomic_file.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

// A process id that no longer runs: a child that has exited and been reaped.
pid_t finished_process() {
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(0);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return pid;
}

std::vector<std::string> names_in(const std::filesystem::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

TEST(AtomicFile, KilledRunsLeftoversAreClearedAndAnOldOutputPutBack) {
    namespace fs = std::filesystem;
    const auto dir = test::temp_dir("atomic_file_leftovers");
    const pid_t dead = finished_process();
    const auto make = [&](const std::string& name, const std::string& text) {
        fs::create_directories(dir / name);
        std::ofstream(dir / name / "file") << text;
    };
    // Killed between the two renames: the old output aside, the new one partial.
    make(fmt::format("out.old-{}", dead), "old");
    make(fmt::format("out.partial-{}", dead), "half");
    make(fmt::format("out.partial-{}", ::getppid()), "a run still going");
    make("out.partial-x", "not a temporary of ours");
    make(fmt::format("other.partial-{}", dead), "another target's");
    clean_up_after_killed_runs(dir / "out");
    EXPECT_EQ(slurp(dir / "out" / "file"), "old");
    EXPECT_EQ(names_in(dir), (std::vector<std::string>{
                                 "other.partial-" + std::to_string(dead), "out",
                                 "out.partial-" + std::to_string(::getppid()), "out.partial-x"}));
    // With the target in place, an old one aside is removed.
    make(fmt::format("out.old-{}", dead), "older");
    clean_up_after_killed_runs(dir / "out");
    EXPECT_EQ(slurp(dir / "out" / "file"), "old");
    EXPECT_FALSE(fs::exists(dir / fmt::format("out.old-{}", dead)));
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
