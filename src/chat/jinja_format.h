// Values as Python writes them: str(), repr(), json.dumps as transformers'
// tojson calls it, printf-style "%" formatting and format-spec mini-language.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "chat/jinja_value.h"

namespace anelm::jinja {

std::string py_str(const Value& v);   // str(v); Undefined prints as ""
std::string py_repr(const Value& v);  // repr(v)
std::string string_repr(std::string_view s);
std::string float_repr(double d);  // shortest round-trip, Python's layout ("1.0", "1e-05")

struct JsonOptions {
    bool ensure_ascii = false;
    std::optional<std::string> indent;  // added once per nesting level; none: one line
    std::string item_separator = ", ";
    std::string key_separator = ": ";
    bool sort_keys = false;
};

// json.dumps(v, ...): raises for values JSON cannot hold (Undefined, objects).
std::string to_json(const Value& v, const JsonOptions& options);

// Python's `format % args`.
std::string percent_format(std::string_view format, const Value& args);

// format(v, spec): the format-spec mini-language of str.format.
std::string format_with_spec(const Value& v, std::string_view spec);

}  // namespace anelm::jinja
