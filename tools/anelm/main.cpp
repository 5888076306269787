// The `anelm` program: parses the command line, runs one subcommand, and turns
// any error into one line on stderr and exit code 1.
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "base/error.h"
#include "command.h"
#include "flag_checks.h"

namespace anelm::cli {

static std::vector<CommandInfo>& command_table() {
    static std::vector<CommandInfo> table;
    return table;
}

bool register_command(CommandInfo info) {
    command_table().push_back(std::move(info));
    return true;
}

}  // namespace anelm::cli

int main(int argc, char** argv) {
    using namespace anelm;
    CLI::App app{"anelm: Hugging Face language models made ready for Apple's Neural Engine, and run fast on the CPU"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "anelm 0.1.0");

    auto& table = cli::command_table();
    std::sort(table.begin(), table.end(),
              [](const auto& a, const auto& b) { return std::string(a.name) < b.name; });
    std::vector<std::pair<CLI::App*, std::function<int()>>> runners;
    for (auto& cmd : table) {
        CLI::App* sub = app.add_subcommand(cmd.name, cmd.description);
        runners.emplace_back(sub, cmd.setup(*sub));
    }

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
        // The subcommand that met the error, else the program itself.
        const CLI::App* where = &app;
        for (const auto& [sub, run] : runners)
            if (sub->parsed()) where = sub;
        for (const std::string& arg : where->remaining())
            if (const std::string hint = cli::nearest_name_hint(*where, arg); !hint.empty()) {
                fmt::print(stderr, "anelm: error: {}: not expected here{}\n", arg, hint);
                return e.get_exit_code();
            }
        fmt::print(stderr, "anelm: error: {} ({} --help lists the options)\n", e.what(),
                   where == &app ? "anelm" : "anelm " + where->get_name());
        return e.get_exit_code();
    }
    try {
        for (auto& [sub, run] : runners)
            if (sub->parsed()) return run();
    } catch (const Error& e) {
        std::fflush(stdout);
        fmt::print(stderr, "anelm: error: {}\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fflush(stdout);
        fmt::print(stderr, "anelm: error: {}\n", e.what());
        return 1;
    }
    return 1;
}
