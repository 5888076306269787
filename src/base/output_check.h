// What a command may write over, checked before any long work. Every folder
// anelm writes holds a list of the files it wrote (`.anelm-output`); --force
// replaces a folder only while that list covers everything in it, so a model,
// notes or anything else a user put there is never deleted. Reports (doctor's
// HTML, plan's SVG) carry `report_mark` near their start and may be replaced
// by the next report.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace anelm {

inline constexpr std::string_view output_list_name = ".anelm-output";
inline constexpr std::string_view report_mark = "<!-- written by anelm -->";

// `out` without a trailing separator ("out/" is "out"): the name a folder
// output is written beside and renamed to.
std::filesystem::path folder_path(const std::string& out);

// Throws Error unless the folder `out` can be written: it is none of
// `inputs` (empty ones skipped), lies inside none and holds none; the nearest
// existing folder above it is writable (missing ones are created); and an
// existing `out` is refused without `force`, and with it unless it is empty
// or a folder anelm wrote holding only the files its list names.
void check_output_folder(const std::filesystem::path& out, bool force,
                         const std::vector<std::string>& inputs = {});

// Throws Error unless the file `out` can be written: it is none of `inputs`
// and lies inside none; its folder exists and is writable; and an existing
// `out` is a report anelm wrote.
void check_output_file(const std::filesystem::path& out,
                       const std::vector<std::string>& inputs = {});

// Writes the list of every file under `dir` into it: the last step of a
// folder being written under its temporary name.
void write_output_list(const std::filesystem::path& dir);

}  // namespace anelm
