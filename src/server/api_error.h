// Errors as OpenAI's API reports them: an HTTP status and a body
// {"error": {"message", "type", "param", "code"}}, which its clients raise as
// typed exceptions.
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

namespace anelm::server {

class ApiError : public std::runtime_error {
public:
    ApiError(int status, std::string type, std::string code, std::string param,
             const std::string& message)
        : std::runtime_error(message),
          status(status),
          type(std::move(type)),
          code(std::move(code)),
          param(std::move(param)) {}

    int status;
    std::string type;   // invalid_request_error, authentication_error, server_error ...
    std::string code;   // "" for none
    std::string param;  // the request field at fault, "" for none
};

nlohmann::json error_body(const ApiError& error);
// Ollama's shape: {"error": message}.
nlohmann::json ollama_error_body(const ApiError& error);

// A 400 about request field `param`.
template <typename... Args>
[[noreturn]] void bad_field(const std::string& param, fmt::format_string<Args...> format,
                            Args&&... args) {
    throw ApiError(400, "invalid_request_error", "", param,
                   fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace anelm::server
