// Errors raised while lexing, parsing or rendering a template. They carry the
// template line when it is known; Template turns them into anelm::Error
// "NAME:LINE: message".
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace anelm::jinja {

class Failure : public std::runtime_error {
public:
    explicit Failure(const std::string& message, int line = 0)
        : std::runtime_error(message), line(line) {}
    int line;  // 0 until the innermost node that knows its line catches it
};

template <typename... Args>
[[noreturn]] void raise(fmt::format_string<Args...> format, Args&&... args) {
    throw Failure(fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void raise_at(int line, fmt::format_string<Args...> format, Args&&... args) {
    throw Failure(fmt::format(format, std::forward<Args>(args)...), line);
}

}  // namespace anelm::jinja
