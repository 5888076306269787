// Runs the built `anelm` program and captures what it prints.
#pragma once

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace anelm::test {

struct CommandResult {
    int exit_code = -1;
    std::string out;  // stdout
    std::string err;  // stderr
};

inline std::string anelm_binary() { return std::string(ANELM_BINARY_DIR) + "/anelm"; }

// `args` is appended to the program path as shell words; quote them yourself.
inline CommandResult run_anelm(const std::string& args) {
    const std::string err_path = std::tmpnam(nullptr);
    const std::string cmd = anelm_binary() + " " + args + " 2>" + err_path + " </dev/null";
    CommandResult r;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
        std::array<char, 4096> buf;
        size_t n;
        while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
        const int status = ::pclose(p);
        r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    if (FILE* f = std::fopen(err_path.c_str(), "rb")) {
        std::array<char, 4096> buf;
        size_t n;
        while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) r.err.append(buf.data(), n);
        std::fclose(f);
    }
    std::remove(err_path.c_str());
    return r;
}

}  // namespace anelm::test
