// Jinja2's built-in tests (`x is defined`, `x is divisibleby 3`, ...).
#include <map>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"
#include "chat/jinja_format.h"
#include "chat/jinja_objects.h"
#include "chat/jinja_ops.h"
#include "chat/jinja_text.h"

namespace anelm::jinja {
namespace {

// The single argument of a comparison-like test.
const Value& operand(const char* test, CallArgs& args, const char* param) {
    ArgBinder bind(test, args, {param});
    if (!bind.get(0)) raise("{}() missing 1 required positional argument: '{}'", test, param);
    return *bind.get(0);
}

bool no_args(const char* test, CallArgs& args) {
    ArgBinder(test, args, {});
    return true;
}

bool t_boolean(Interpreter&, const Value& v, CallArgs& a) {
    return no_args("boolean", a) && v.is_bool();
}
// Python's callable(): Undefined has __call__ (it raises when called).
bool t_callable(Interpreter&, const Value& v, CallArgs& a) {
    no_args("callable", a);
    return v.is_undefined() || (v.is_object() && v.as_object().is_callable());
}
bool t_defined(Interpreter&, const Value& v, CallArgs& a) {
    return no_args("defined", a) && !v.is_undefined();
}
bool t_undefined(Interpreter&, const Value& v, CallArgs& a) {
    return no_args("undefined", a) && v.is_undefined();
}
bool t_none(Interpreter&, const Value& v, CallArgs& a) {
    return no_args("none", a) && v.is_none();
}
bool t_true(Interpreter&, const Value& v, CallArgs& a) {
    return no_args("true", a) && v.is_bool() && v.as_bool();
}
bool t_false(Interpreter&, const Value& v, CallArgs& a) {
    return no_args("false", a) && v.is_bool() && !v.as_bool();
}
bool t_string(Interpreter&, const Value& v, CallArgs& a) {
    return no_args("string", a) && v.is_string();
}
bool t_mapping(Interpreter&, const Value& v, CallArgs& a) {
    return no_args("mapping", a) && v.is_dict();
}
bool t_number(Interpreter&, const Value& v, CallArgs& a) {
    return no_args("number", a) && v.is_number();
}
bool t_integer(Interpreter&, const Value& v, CallArgs& a) {
    return no_args("integer", a) && v.is_int();
}
bool t_float(Interpreter&, const Value& v, CallArgs& a) {
    return no_args("float", a) && v.is_float();
}
// Markup (what escape and safe return in Jinja2) is kept as a plain string here.
bool t_escaped(Interpreter&, const Value&, CallArgs& a) {
    no_args("escaped", a);
    return false;
}

// Python's iter() succeeds on these (Undefined iterates as empty).
bool t_iterable(Interpreter&, const Value& v, CallArgs& a) {
    no_args("iterable", a);
    if (v.is_object())
        return v.as_object().type_name() == "LoopContext" ||
               dynamic_cast<Generator*>(&v.as_object());
    return v.is_undefined() || v.is_string() || v.is_array() || v.is_dict();
}

// len() and [] both work.
bool t_sequence(Interpreter&, const Value& v, CallArgs& a) {
    no_args("sequence", a);
    return v.is_undefined() || v.is_string() || v.is_array() || v.is_dict();
}

bool t_lower(Interpreter&, const Value& v, CallArgs& a) {
    no_args("lower", a);
    const std::string s = py_str(v);
    bool cased = false;
    for (size_t i = 0; i < s.size();) {
        const char32_t c = text::decode(s, i);
        if (text::is_upper(c) || (text::is_cased(c) && !text::is_lower(c))) return false;
        cased = cased || text::is_lower(c);
    }
    return cased;
}

bool t_upper(Interpreter&, const Value& v, CallArgs& a) {
    no_args("upper", a);
    const std::string s = py_str(v);
    bool cased = false;
    for (size_t i = 0; i < s.size();) {
        const char32_t c = text::decode(s, i);
        if (text::is_lower(c) || (text::is_cased(c) && !text::is_upper(c))) return false;
        cased = cased || text::is_upper(c);
    }
    return cased;
}

bool t_even(Interpreter&, const Value& v, CallArgs& a) {
    no_args("even", a);
    return equals(binary_op(BinaryOp::mod, v, Value::integer(2)), Value::integer(0));
}
bool t_odd(Interpreter&, const Value& v, CallArgs& a) {
    no_args("odd", a);
    return equals(binary_op(BinaryOp::mod, v, Value::integer(2)), Value::integer(1));
}
bool t_divisibleby(Interpreter&, const Value& v, CallArgs& a) {
    return equals(binary_op(BinaryOp::mod, v, operand("divisibleby", a, "num")), Value::integer(0));
}

bool t_eq(Interpreter&, const Value& v, CallArgs& a) {
    return compare(CompareOp::eq, v, operand("eq", a, "other"));
}
bool t_ne(Interpreter&, const Value& v, CallArgs& a) {
    return compare(CompareOp::ne, v, operand("ne", a, "other"));
}
bool t_lt(Interpreter&, const Value& v, CallArgs& a) {
    return compare(CompareOp::lt, v, operand("lt", a, "other"));
}
bool t_le(Interpreter&, const Value& v, CallArgs& a) {
    return compare(CompareOp::le, v, operand("le", a, "other"));
}
bool t_gt(Interpreter&, const Value& v, CallArgs& a) {
    return compare(CompareOp::gt, v, operand("gt", a, "other"));
}
bool t_ge(Interpreter&, const Value& v, CallArgs& a) {
    return compare(CompareOp::ge, v, operand("ge", a, "other"));
}
bool t_in(Interpreter&, const Value& v, CallArgs& a) {
    return contains(operand("in", a, "seq"), v);
}

// Python's `is`: the same object (scalars compare by value and type).
bool t_sameas(Interpreter&, const Value& v, CallArgs& a) {
    const Value& other = operand("sameas", a, "other");
    if (v.kind() != other.kind()) return false;
    switch (v.kind()) {
        case Kind::array:
            return &v.as_array() == &other.as_array();
        case Kind::dict:
            return &v.as_dict() == &other.as_dict();
        default:
            return equals(v, other);
    }
}

bool t_filter(Interpreter&, const Value& v, CallArgs& a) {
    return no_args("filter", a) && v.is_string() && find_filter(v.as_string()) != nullptr;
}
bool t_test(Interpreter&, const Value& v, CallArgs& a) {
    return no_args("test", a) && v.is_string() && find_test(v.as_string()) != nullptr;
}

const std::map<std::string_view, TestFn>& tests() {
    static const std::map<std::string_view, TestFn> table = {
        {"!=", t_ne},
        {"<", t_lt},
        {"<=", t_le},
        {"==", t_eq},
        {">", t_gt},
        {">=", t_ge},
        {"boolean", t_boolean},
        {"callable", t_callable},
        {"defined", t_defined},
        {"divisibleby", t_divisibleby},
        {"eq", t_eq},
        {"equalto", t_eq},
        {"escaped", t_escaped},
        {"even", t_even},
        {"false", t_false},
        {"filter", t_filter},
        {"float", t_float},
        {"ge", t_ge},
        {"greaterthan", t_gt},
        {"gt", t_gt},
        {"in", t_in},
        {"integer", t_integer},
        {"iterable", t_iterable},
        {"le", t_le},
        {"lessthan", t_lt},
        {"lower", t_lower},
        {"lt", t_lt},
        {"mapping", t_mapping},
        {"ne", t_ne},
        {"none", t_none},
        {"number", t_number},
        {"odd", t_odd},
        {"sameas", t_sameas},
        {"sequence", t_sequence},
        {"string", t_string},
        {"test", t_test},
        {"true", t_true},
        {"undefined", t_undefined},
        {"upper", t_upper},
    };
    return table;
}

}  // namespace

TestFn find_test(std::string_view name) {
    const auto it = tests().find(name);
    return it == tests().end() ? nullptr : it->second;
}

}  // namespace anelm::jinja
