// Values as Python writes them with str() and repr().
#pragma once

#include <string>
#include <string_view>

#include "chat/jinja_value.h"

namespace anelm::jinja {

std::string py_str(const Value& v);   // str(v); Undefined prints as ""
std::string py_repr(const Value& v);  // repr(v)
std::string string_repr(std::string_view s);
std::string float_repr(double d);  // shortest round-trip, Python's layout ("1.0", "1e-05")

}  // namespace anelm::jinja
