// tokenizer.json "normalizer": rewrites each stretch of text between added
// tokens before pre-tokenization.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>

namespace anelm {

class Normalizer {
public:
    virtual ~Normalizer() = default;
    virtual void normalize(std::string& text) const = 0;
};

// From the JSON object (null gives nullptr). where names the file and field for
// errors; an unsupported type is an error naming it.
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& j, const std::string& where);

}  // namespace anelm
