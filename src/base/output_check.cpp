#include "base/output_check.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

#include "base/atomic_file.h"
#include "base/error.h"

namespace anelm {
namespace {

namespace fs = std::filesystem;

// Absolute, with symbolic links and dots resolved as far as the path exists,
// and no trailing separator: the form two paths are compared in.
fs::path resolved(const fs::path& p) {
    std::error_code ec;
    fs::path r = fs::weakly_canonical(fs::absolute(p), ec);
    if (ec) r = fs::absolute(p).lexically_normal();
    return r.has_filename() ? r : r.parent_path();
}

// True when `inner` is `outer` or lies under it.
bool within(const fs::path& inner, const fs::path& outer) {
    return std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end()).first ==
           outer.end();
}

void check_writable_folder(const fs::path& out, const fs::path& dir) {
    if (!fs::exists(dir)) fail("{}: folder {} does not exist", out.string(), dir.string());
    if (!fs::is_directory(dir)) fail("{}: {} is not a folder", out.string(), dir.string());
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        fail("{}: cannot write in {}: {}", out.string(), dir.string(), std::strerror(errno));
}

std::set<std::string> listed_files(const fs::path& list) {
    std::set<std::string> names;
    std::ifstream in(list);
    for (std::string line; std::getline(in, line);)
        if (!line.empty() && line[0] != '#') names.insert(line);
    return names;
}

// Every file under `dir` (folders themselves hold nothing to lose), as paths
// relative to it. Finder's .DS_Store is left out: macOS writes one into any
// folder it shows.
std::vector<std::string> files_under(const fs::path& dir) {
    std::vector<std::string> files;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
        if (it->is_directory() && !it->is_symlink()) continue;
        if (it->path().filename() == ".DS_Store") continue;
        files.push_back(it->path().lexically_relative(dir).generic_string());
    }
    if (ec) fail("{}: cannot list: {}", dir.string(), ec.message());
    return files;
}

// Throws Error when `out` is one of `inputs`, lies inside one or holds one.
void check_output_apart(const fs::path& out, const std::vector<std::string>& inputs) {
    const fs::path o = resolved(out);
    for (const std::string& input : inputs) {
        if (input.empty()) continue;
        const fs::path i = resolved(input);
        if (o == i) fail("{}: is the input {}; choose another output", out.string(), input);
        if (within(o, i))
            fail("{}: lies inside the input {}; choose another output", out.string(), input);
        if (within(i, o))
            fail("{}: holds the input {}; choose another output", out.string(), input);
    }
}

}  // namespace

fs::path folder_path(const std::string& out) {
    const fs::path p = fs::path(out).lexically_normal();
    return p.has_filename() || !p.has_relative_path() ? p : p.parent_path();
}

void check_output_folder(const fs::path& out, bool force, const std::vector<std::string>& inputs) {
    check_output_apart(out, inputs);
    fs::path above = resolved(out).parent_path();
    while (!fs::exists(above) && above.has_relative_path()) above = above.parent_path();
    check_writable_folder(out, above);

    std::error_code ec;
    const fs::file_status status = fs::symlink_status(out, ec);
    if (!fs::exists(status)) return;
    if (!force) fail("{}: already exists (use --force to replace it)", out.string());
    if (!fs::is_directory(status))
        fail("{}: not a folder anelm wrote; --force replaces only anelm's own output",
             out.string());
    const std::vector<std::string> files = files_under(out);
    if (files.empty()) return;
    const fs::path list = out / output_list_name;
    if (!fs::is_regular_file(fs::symlink_status(list, ec)))
        fail(
            "{}: holds files anelm did not write (it has no {}); --force replaces only anelm's "
            "own output",
            out.string(), output_list_name);
    const std::set<std::string> listed = listed_files(list);
    for (const std::string& f : files)
        if (f != output_list_name && !listed.contains(f))
            fail(
                "{}: holds {}, which anelm did not write; --force replaces only anelm's own "
                "output",
                out.string(), f);
}

void check_output_file(const fs::path& out, const std::vector<std::string>& inputs) {
    check_output_apart(out, inputs);
    check_writable_folder(out, resolved(out).parent_path());
    std::error_code ec;
    const fs::file_status status = fs::symlink_status(out, ec);
    if (!fs::exists(status)) return;
    if (fs::is_regular_file(status)) {
        std::string head(4096, '\0');
        std::ifstream in(out, std::ios::binary);
        in.read(head.data(), static_cast<std::streamsize>(head.size()));
        head.resize(static_cast<size_t>(in.gcount()));
        if (head.find(report_mark) != std::string::npos) return;
    }
    fail("{}: exists and anelm did not write it; remove it or choose another name", out.string());
}

void write_output_list(const fs::path& dir) {
    std::vector<std::string> files = files_under(dir);
    std::erase(files, std::string(output_list_name));
    std::ranges::sort(files);
    std::string text =
        "# The files anelm wrote here. anelm's --force replaces this folder only while it\n"
        "# holds no others.\n";
    for (const std::string& f : files) text += f + "\n";
    write_file_atomic((dir / output_list_name).string(), text);
}

}  // namespace anelm
