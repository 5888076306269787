// JSON string literals spelt as Python's json.dumps spells them, which is what
// chat templates' tojson and Hugging Face's tokenizer.json readers expect.
#pragma once

#include <string>
#include <string_view>

namespace anelm {

// Appends s as a quoted JSON string: \" \\ \n \r \t \b \f, other control
// characters as \u00xx. Other bytes are copied as they are, or with ensure_ascii
// (json.dumps' default) every character from U+007F on is a \u escape, a
// surrogate pair past U+FFFF.
void append_json_string(std::string& out, std::string_view s, bool ensure_ascii = false);

}  // namespace anelm
