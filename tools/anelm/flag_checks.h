// The checks every command's flags share: a numeric flag's range (the same
// rule a server request's field is held to), the thread count, and the flag a
// mistyped one was probably meant to be.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "base/value_range.h"

namespace anelm::cli {

// Refuses values outside `range` at parse time: "--temp: -1 is outside [0, 2]".
CLI::Option* in_range(CLI::Option* option, ValueRange range);

// -t,--threads: 1 up to the hardware threads of this machine; 0 (not given)
// means its physical cores.
CLI::Option* add_threads_option(CLI::App& app, int& threads);

// For an argument `app` did not expect: " (did you mean --temp?)" when one of
// its flags (or, for a word, one of its subcommands) is a few edits away, else "".
std::string nearest_name_hint(const CLI::App& app, const std::string& unknown);

}  // namespace anelm::cli
