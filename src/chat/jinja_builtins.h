// The built-in filters, tests and global functions, looked up by name.
#pragma once

#include <initializer_list>
#include <string_view>
#include <vector>

#include "chat/jinja_value.h"

namespace anelm::jinja {

using FilterFn = Value (*)(Interpreter& interp, const Value& value, CallArgs& args);
using TestFn = bool (*)(Interpreter& interp, const Value& value, CallArgs& args);

// Null when there is no such filter / test / global.
FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);
const Value* find_global(std::string_view name);

// Binds call arguments to named parameters, Python style: positionals first,
// then keywords; extra or unknown arguments raise.
class ArgBinder {
public:
    ArgBinder(std::string_view function, const CallArgs& args,
              std::initializer_list<std::string_view> params);
    const Value* get(size_t i) const { return bound_[i]; }
    Value get_or(size_t i, Value fallback) const { return bound_[i] ? *bound_[i] : fallback; }

private:
    std::vector<const Value*> bound_;
};

}  // namespace anelm::jinja
