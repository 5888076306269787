// JSON in and out: JSON data as template values, and json.dumps as
// transformers' tojson filter calls it.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "chat/jinja_value.h"

namespace anelm::jinja {

// Objects become dicts in their key order; integers stay ints, other numbers floats.
Value from_json(const nlohmann::ordered_json& j);

struct JsonOptions {
    bool ensure_ascii = false;
    std::optional<std::string> indent;  // added once per nesting level; none: one line
    std::string item_separator = ", ";
    std::string key_separator = ": ";
    bool sort_keys = false;
};

// json.dumps(v, ...): raises for values JSON cannot hold (Undefined, objects).
std::string to_json(const Value& v, const JsonOptions& options);

}  // namespace anelm::jinja
