// Jinja2's static name resolution (its idtracking). Each scope classifies its
// names in source order: a name read first resolves outward at run time; a
// name assigned first, with no binding in an enclosing scope, is undefined from
// the start of the scope — also for loops and macros that run before the
// assignment, which then do not see a context value of the same name. A name
// assigned under `if` resolves outward until the assignment runs.
#pragma once

#include "chat/jinja_ast.h"

namespace anelm::jinja {

// Fills the Unset lists of the scopes nested in `body` and returns the
// template scope's own.
Unset analyze_scopes(Body& body);

}  // namespace anelm::jinja
