// Python operators on template values, and Jinja2's sandboxed attribute and
// item access. Errors carry Python's messages.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "chat/jinja_value.h"

namespace anelm::jinja {

enum class BinaryOp { add, sub, mul, div, floordiv, mod, pow };
enum class CompareOp { eq, ne, lt, le, gt, ge, in, not_in };

Value binary_op(BinaryOp op, const Value& a, const Value& b);
Value negate(const Value& v);
Value unary_plus(const Value& v);
bool compare(CompareOp op, const Value& a, const Value& b);
bool less(const Value& a, const Value& b);  // Python's a < b; raises for unorderable types
bool contains(const Value& container, const Value& item);  // Python's `item in container`

// a.name: Python attribute (methods of str, list, dict) first, then the item.
Value get_attribute(const Value& obj, std::string_view name);
// a[key]: the item first, then a Python attribute of that name.
Value get_item(const Value& obj, const Value& key);
// a[start:stop:step]; unset bounds are None.
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// Python's iter(): list items, dict keys, the characters of a string;
// Undefined iterates as nothing.
std::vector<Value> iterate(const Value& v);
size_t length(const Value& v);  // len()

// A string or list made by an operation may not exceed this (bytes or items),
// so a hostile template cannot exhaust memory.
constexpr size_t max_result_size = size_t{1} << 26;

}  // namespace anelm::jinja
