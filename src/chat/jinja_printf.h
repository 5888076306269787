// Python's string formatting: `format % args` and the format-spec
// mini-language of str.format.
#pragma once

#include <string>
#include <string_view>

#include "chat/jinja_value.h"

namespace anelm::jinja {

std::string percent_format(std::string_view format, const Value& args);

// format(v, spec)
std::string format_with_spec(const Value& v, std::string_view spec);

}  // namespace anelm::jinja
