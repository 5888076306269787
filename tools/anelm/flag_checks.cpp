#include "flag_checks.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace anelm::cli {

CLI::Option* in_range(CLI::Option* option, ValueRange range) {
    return option->check(CLI::Validator(
        [range](std::string& text) -> std::string {
            size_t used = 0;
            double value = 0;
            try {
                value = std::stod(text, &used);
            } catch (const std::exception&) {
                return "";  // not a number: the conversion says so
            }
            if (used != text.size() || range.contains(value)) return "";
            return range_violation("", value, range);
        },
        fmt::format("in [{}, {}]", range.lo, range.hi)));
}

CLI::Option* add_threads_option(CLI::App& app, int& threads) {
    const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
    return in_range(app.add_option("-t,--threads", threads,
                                   fmt::format("threads, at most this machine's {} (default: its "
                                               "physical cores)",
                                               hardware)),
                    {1, static_cast<double>(hardware)});
}

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = above;
        }
    }
    return row[b.size()];
}

}  // namespace

std::string nearest_name_hint(const CLI::App& app, const std::string& unknown) {
    const std::string name = unknown.substr(0, unknown.find('='));
    std::vector<std::string> names;
    if (name.starts_with("-")) {
        for (const CLI::Option* o : app.get_options()) {
            for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
            for (const std::string& s : o->get_snames()) names.push_back("-" + s);
        }
    } else {
        for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
    }
    std::string best;
    size_t best_distance = std::max<size_t>(2, name.size() / 3) + 1;
    for (const std::string& candidate : names)
        if (const size_t d = edit_distance(name, candidate); d < best_distance) {
            best_distance = d;
            best = candidate;
        }
    return best.empty() ? "" : fmt::format(" (did you mean {}?)", best);
}

}  // namespace anelm::cli
