// Builds the syntax tree from tokens, following Jinja2's grammar and operator
// precedence (filters bind tighter than arithmetic, `is` tighter than `not`).
#pragma once

#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_lexer.h"

namespace anelm::jinja {

// Raises Failure (with the line) for syntax errors and unknown filters or tests.
Body parse(std::vector<Token> tokens);

}  // namespace anelm::jinja
