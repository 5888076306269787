// Writing a whole file or folder so that readers never see half of it: it
// goes to a temporary name beside the target and is renamed when complete.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace anelm {

// The name beside `target` this process writes it under first: NAME.partial-PID.
std::filesystem::path partial_path(const std::filesystem::path& target);

// Clears what runs killed before finishing left beside `target`: their
// NAME.partial-PID, and a NAME.old-PID set aside while replacing the target,
// which goes back in place if the target is gone (killed between the renames).
// Names whose process still runs are left alone. Writers call it first.
void clean_up_after_killed_runs(const std::filesystem::path& target);

// Throws Error naming the path when any step fails; the temporary is removed.
void write_file_atomic(const std::string& path, std::string_view content);

// Renames the finished folder `tmp` (beside `target`) to `target`. An existing
// target, when `replace`, is renamed aside first and removed after, so at any
// moment the target is the old folder whole, the new one, or (between the two
// renames) absent; removing it in place would leave half of it to a kill.
void move_folder_into_place(const std::filesystem::path& tmp, const std::filesystem::path& target,
                            bool replace);

}  // namespace anelm
