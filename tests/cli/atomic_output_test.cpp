// kill -9 at moments spread over a run of `anelm synth`, `convert` and
// `doctor --report` that replaces an existing output: afterwards the target
// is the old output whole, the new output whole, or absent (killed between
// removing the old and renaming the new into place); never a mix of the two
// or a file cut short. The run's temporary lies beside the target under
// another name, and the next run clears it.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include "run_anelm.h"
#include "synth/synth.h"
#include "test_support.h"

extern char** environ;

namespace anelm {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Every file under `target` (or the file itself) with its size, and a hash of
// its bytes when `contents` (converted packages differ run to run in their
// Manifest's identifiers, never in their sizes). Empty when absent.
using Fingerprint = std::map<std::string, std::string>;

std::string describe_file(const fs::path& file, bool contents) {
    std::string text = std::to_string(fs::file_size(file));
    if (contents) {
        std::ifstream in(file, std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), {});
        text += fmt::format(":{:x}", std::hash<std::string>{}(bytes));
    }
    return text;
}

Fingerprint fingerprint(const fs::path& target, bool contents) {
    Fingerprint out;
    if (fs::is_regular_file(target)) out["."] = describe_file(target, contents);
    if (fs::is_directory(target))
        for (const auto& e : fs::recursive_directory_iterator(target))
            out[fs::relative(e.path(), target).string()] =
                e.is_regular_file() ? describe_file(e.path(), contents) : "dir";
    return out;
}

// Runs `anelm args...` with its output discarded; kills it with SIGKILL after
// `delay` unless it ended first. Returns how long it ran.
Clock::duration run(const std::vector<std::string>& args,
                    std::optional<std::chrono::microseconds> delay = {}) {
    std::vector<std::string> words = {test::anelm_binary()};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    const auto t0 = Clock::now();
    const int err = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    EXPECT_EQ(err, 0) << argv[0];
    if (err != 0) return {};
    if (delay) {
        std::this_thread::sleep_for(*delay);
        ::kill(pid, SIGKILL);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!delay) {
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << words[1];
    }
    return Clock::now() - t0;
}

// What else lies beside `target`: a killed run's temporaries.
std::vector<std::string> beside(const fs::path& target) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(target.parent_path()))
        if (e.path().filename() != target.filename()) names.push_back(e.path().filename());
    return names;
}

// `make_old` writes the old output; `make_new` replaces it and is killed at
// `kills` moments spread over its whole run (jittered, the same each time).
void expect_old_new_or_none(const fs::path& target, const std::vector<std::string>& make_old,
                            const std::vector<std::string>& make_new, bool contents,
                            int kills = 16) {
    run(make_new);
    const Fingerprint new_output = fingerprint(target, contents);
    ASSERT_FALSE(new_output.empty());
    run(make_old);
    const Fingerprint old_output = fingerprint(target, contents);
    ASSERT_NE(old_output, new_output);
    const auto whole = std::chrono::duration_cast<std::chrono::microseconds>(run(make_new));

    std::mt19937 rng(7);
    std::uniform_real_distribution<double> jitter(0.0, 1.0);
    std::map<std::string, int> outcomes;
    for (int i = 0; i < kills; ++i) {
        run(make_old);
        const auto delay = std::chrono::microseconds(
            static_cast<int64_t>(static_cast<double>(whole.count()) * (i + jitter(rng)) / kills));
        run(make_new, delay);
        const Fingerprint now = fingerprint(target, contents);
        const char* outcome = now.empty()         ? "none"
                              : now == old_output ? "old"
                              : now == new_output ? "new"
                                                  : "mixed";
        EXPECT_STRNE(outcome, "mixed")
            << "killed after " << delay.count() << " us of " << whole.count();
        ++outcomes[outcome];
    }
    // The next run clears what the killed ones left (restoring an old output
    // set aside if the kill came between the renames).
    run(make_old);
    EXPECT_EQ(fingerprint(target, contents), old_output);
    EXPECT_EQ(beside(target), std::vector<std::string>{});
    std::string summary;
    for (const auto& [k, n] : outcomes) summary += fmt::format(" {} {}", k, n);
    std::cout << target.filename() << ": run " << whole.count() << " us; after kills:" << summary
              << "\n";
}

TEST(AtomicOutput, SynthReplacingAFolder) {
    const fs::path dir = test::temp_dir("atomic-synth");
    const std::string out = (dir / "model").string();
    expect_old_new_or_none(dir / "model",
                           {"synth", "tiny-qwen3", "-o", out, "--seed", "1", "--force"},
                           {"synth", "tiny-gemma3", "-o", out, "--seed", "2", "--force"}, true);
}

TEST(AtomicOutput, ConvertReplacingAFolder) {
    const fs::path dir = test::temp_dir("atomic-convert");
    const std::string model = (dir / "model").string();
    synth_write("tiny-llama", model, DType::bf16, 3);
    const fs::path out_dir = dir / "converted";
    fs::create_directories(out_dir);
    const std::string out = (out_dir / "out").string();
    const std::vector<std::string> common = {
        "convert", model, "-o", out, "--ctx", "64", "--lut-head", "none", "--force", "--lut-ffn"};
    auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = common;
        args.insert(args.end(), extra.begin(), extra.end());
        return args;
    };
    expect_old_new_or_none(out_dir / "out", with({"none", "--chunks", "1"}),
                           with({"4", "--chunks", "2", "--argmax"}), false);
    // What is left loads.
    if (fs::exists(out)) {
        EXPECT_EQ(test::run_anelm("info '" + out + "'").exit_code, 0);
    }
}

TEST(AtomicOutput, DoctorReportReplacingAFile) {
    const fs::path dir = test::temp_dir("atomic-doctor");
    const std::string model = (dir / "model").string();
    synth_write("tiny-llama", model, DType::f32, 5);
    const fs::path report_dir = dir / "reports";
    fs::create_directories(report_dir);
    const std::string report = (report_dir / "report.html").string();
    // By size: the report states its own run time, which a loaded machine
    // rounds to another tenth of a second from one run to the next.
    expect_old_new_or_none(report_dir / "report.html",
                           {"doctor", model, "-n", "4", "-t", "1", "--report", report},
                           {"doctor", model, "-n", "12", "-t", "1", "--report", report}, false);
}

}  // namespace
}  // namespace anelm
