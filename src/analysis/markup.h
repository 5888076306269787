// Text placed inside HTML and SVG reports.
#pragma once

#include <string>
#include <string_view>

namespace anelm {

// The text with &, <, > and " escaped, safe in element content and quoted attributes.
std::string escape_markup(std::string_view text);

}  // namespace anelm
