#include "io/generation_config.h"

#include <filesystem>

#include "base/error.h"
#include "io/json_file.h"

namespace anelm {

GenerationSampling read_generation_sampling(const std::string& path) {
    const nlohmann::json j = read_json_file(path);
    if (!j.is_object()) fail("{}: expected a JSON object", path);
    GenerationSampling s;
    const auto take = [&](const char* key, auto& field, bool (nlohmann::json::*is_type)() const,
                          const char* expected) {
        const auto it = j.find(key);
        if (it == j.end() || it->is_null()) return;
        if (!((*it).*is_type)())
            fail("{}: {}: expected {}, got {}", path, key, expected, json_type_words(*it));
        field = it->template get<typename std::remove_reference_t<decltype(field)>::value_type>();
    };
    take("do_sample", s.do_sample, &nlohmann::json::is_boolean, "true or false");
    take("temperature", s.temperature, &nlohmann::json::is_number, "a number");
    take("top_p", s.top_p, &nlohmann::json::is_number, "a number");
    take("min_p", s.min_p, &nlohmann::json::is_number, "a number");
    take("repetition_penalty", s.repetition_penalty, &nlohmann::json::is_number, "a number");
    take("top_k", s.top_k, &nlohmann::json::is_number_integer, "an integer");
    return s;
}

GenerationSampling model_generation_sampling(const std::string& model_path) {
    const std::filesystem::path file =
        std::filesystem::path(model_path) / "generation_config.json";
    std::error_code ec;
    if (!std::filesystem::is_directory(model_path, ec) || !std::filesystem::exists(file, ec))
        return {};
    return read_generation_sampling(file.string());
}

}  // namespace anelm
