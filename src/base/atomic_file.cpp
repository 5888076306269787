#include "base/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "base/error.h"

namespace anelm {

void write_file_atomic(const std::string& path, std::string_view content) {
    const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) fail("{}: cannot write: {}", path, std::strerror(errno));
    const bool written = std::fwrite(content.data(), 1, content.size(), f) == content.size();
    const bool closed = std::fclose(f) == 0;
    std::error_code ec;
    if (!written || !closed) {
        std::filesystem::remove(tmp, ec);
        fail("{}: cannot write: {}", path, std::strerror(errno));
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        std::filesystem::remove(tmp, ec);
        fail("{}: cannot rename {} to it: {}", path, tmp, ec.message());
    }
}

void move_folder_into_place(const std::filesystem::path& tmp, const std::filesystem::path& target,
                            bool replace) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path aside;
    if (replace && fs::exists(target, ec)) {
        aside = target;
        aside += fmt::format(".old-{}", ::getpid());
        fs::remove_all(aside, ec);
        fs::rename(target, aside, ec);
        if (ec) fail("{}: cannot move the old output aside: {}", target.string(), ec.message());
    }
    fs::rename(tmp, target, ec);
    if (ec) {
        std::error_code ignored;
        if (!aside.empty()) fs::rename(aside, target, ignored);
        fail("{}: cannot rename {} to it: {}", target.string(), tmp.string(), ec.message());
    }
    if (!aside.empty()) fs::remove_all(aside, ec);
}

}  // namespace anelm
