// Each subcommand lives in its own file and registers itself here.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace anelm::cli {

// Adds the subcommand's options to `app` and returns the function that runs it
// (called after parsing) with the process exit code as its result.
using CommandSetup = std::function<std::function<int()>(CLI::App& app)>;

struct CommandInfo {
    const char* name;
    const char* description;
    CommandSetup setup;
};

// Called from a static initialiser in each subcommand's file.
bool register_command(CommandInfo info);

}  // namespace anelm::cli
