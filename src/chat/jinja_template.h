// A compiled Jinja template, rendered with the semantics of Jinja2's
// ImmutableSandboxedEnvironment as Hugging Face transformers configures it.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_json.h"

namespace anelm::jinja {

class Template {
public:
    // Throws anelm::Error "NAME:LINE: message" for syntax errors.
    Template(std::string_view source, std::string name);

    const std::string& name() const { return name_; }

    // `variables` must be a JSON object. Throws anelm::Error "NAME:LINE: message"
    // for errors raised while rendering (raise_exception included).
    std::string render(const nlohmann::ordered_json& variables) const;
    std::string render(std::vector<std::pair<std::string, Value>> variables) const;

private:
    std::string name_;
    Body body_;
    Unset unset_;
};

}  // namespace anelm::jinja
