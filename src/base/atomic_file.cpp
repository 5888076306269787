#include "base/atomic_file.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "base/error.h"

namespace anelm {
namespace {

namespace fs = std::filesystem;

fs::path beside(const fs::path& target, std::string_view kind, pid_t pid) {
    fs::path p = target;
    p += fmt::format(".{}-{}", kind, pid);
    return p;
}

// The process of a NAME.KIND-PID beside `target`, or 0 when `name` is not one.
pid_t temporary_owner(std::string_view name, const std::string& base, std::string_view kind) {
    const std::string prefix = fmt::format("{}.{}-", base, kind);
    if (!name.starts_with(prefix)) return 0;
    const std::string_view digits = name.substr(prefix.size());
    pid_t pid = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
    return ec == std::errc() && end == digits.data() + digits.size() ? pid : 0;
}

bool running(pid_t pid) {
    return pid == ::getpid() || ::kill(pid, 0) == 0 || errno == EPERM;
}

}  // namespace

fs::path partial_path(const fs::path& target) {
    return beside(target, "partial", ::getpid());
}

void clean_up_after_killed_runs(const fs::path& target) {
    const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
    const std::string base = target.filename().string();
    std::error_code ec;
    std::vector<fs::path> partial, old;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (const pid_t pid = temporary_owner(name, base, "partial"); pid && !running(pid))
            partial.push_back(entry.path());
        if (const pid_t pid = temporary_owner(name, base, "old"); pid && !running(pid))
            old.push_back(entry.path());
    }
    for (const fs::path& p : partial) fs::remove_all(p, ec);
    for (const fs::path& p : old) {
        if (!fs::exists(target, ec)) fs::rename(p, target, ec);
        if (fs::exists(p, ec)) fs::remove_all(p, ec);
    }
}

void write_file_atomic(const std::string& path, std::string_view content) {
    clean_up_after_killed_runs(path);
    const std::string tmp = partial_path(path).string();
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

void move_folder_into_place(const fs::path& tmp, const fs::path& target, bool replace) {
    std::error_code ec;
    fs::path aside;
    if (replace && fs::exists(target, ec)) {
        aside = beside(target, "old", ::getpid());
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
