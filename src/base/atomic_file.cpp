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

}  // namespace anelm
