#include "server/api_error.h"

namespace anelm::server {

nlohmann::json error_body(const ApiError& error) {
    auto or_null = [](const std::string& s) {
        return s.empty() ? nlohmann::json() : nlohmann::json(s);
    };
    return {{"error",
             {{"message", error.what()},
              {"type", error.type},
              {"param", or_null(error.param)},
              {"code", or_null(error.code)}}}};
}

nlohmann::json ollama_error_body(const ApiError& error) {
    return {{"error", error.what()}};
}

}  // namespace anelm::server
