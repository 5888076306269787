// Rendering helpers for the template tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "base/error.h"
#include "chat/jinja_template.h"

namespace anelm::jinja::test {

using ojson = nlohmann::ordered_json;

inline std::string render(std::string_view source, const ojson& vars = ojson::object()) {
    return Template(source, "t").render(vars);
}

// The anelm::Error message of a template that fails to compile or render.
inline std::string render_error(std::string_view source, const ojson& vars = ojson::object()) {
    try {
        const std::string out = render(source, vars);
        ADD_FAILURE() << "expected an error, got output: " << out;
    } catch (const Error& e) {
        return e.what();
    }
    return {};
}

}  // namespace anelm::jinja::test
