// Runs the built `anelm` program and captures what it prints.
#pragma once

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace anelm::test {

struct CommandResult {
    int exit_code = -1;
    std::string out;  // stdout
    std::string err;  // stderr
};

inline std::string anelm_binary() { return std::string(ANELM_BINARY_DIR) + "/anelm"; }

// Appends everything left in f to out.
inline void read_all(FILE* f, std::string& out) {
    std::array<char, 4096> buf;
    size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) out.append(buf.data(), n);
}

// `args` is appended to the program path as shell words; quote them yourself.
inline CommandResult run_anelm(const std::string& args) {
    std::string err_path =
        (std::filesystem::temp_directory_path() / "anelm-test-stderr-XXXXXX").string();
    const int fd = ::mkstemp(err_path.data());
    if (fd >= 0) ::close(fd);
    const std::string cmd = anelm_binary() + " " + args + " 2>" + err_path + " </dev/null";
    CommandResult r;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
        read_all(p, r.out);
        const int status = ::pclose(p);
        r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    if (FILE* f = std::fopen(err_path.c_str(), "rb")) {
        read_all(f, r.err);
        std::fclose(f);
    }
    std::remove(err_path.c_str());
    return r;
}

}  // namespace anelm::test
