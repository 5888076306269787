#include "chat/jinja_ops.h"

#include <cmath>
#include <optional>

#include "chat/jinja_error.h"
#include "chat/jinja_format.h"
#include "chat/jinja_methods.h"
#include "chat/jinja_objects.h"
#include "chat/jinja_printf.h"
#include "chat/jinja_text.h"

namespace anelm::jinja {

static const char* op_symbol(BinaryOp op) {
    switch (op) {
        case BinaryOp::add:
            return "+";
        case BinaryOp::sub:
            return "-";
        case BinaryOp::mul:
            return "*";
        case BinaryOp::div:
            return "/";
        case BinaryOp::floordiv:
            return "//";
        case BinaryOp::mod:
            return "%";
        case BinaryOp::pow:
            return "** or pow()";
    }
    return "?";
}

[[noreturn]] static void unsupported(BinaryOp op, const Value& a, const Value& b) {
    raise("unsupported operand type(s) for {}: '{}' and '{}'", op_symbol(op), type_name(a),
          type_name(b));
}

static void check_size(size_t n) {
    if (n > max_result_size) raise("result too large ({} > {})", n, max_result_size);
}

// Applies a __builtin_*_overflow operation, raising on overflow.
template <typename Op>
static int64_t checked(Op op, int64_t x, int64_t y) {
    int64_t r = 0;
    if (op(x, y, &r)) raise("integer overflow");
    return r;
}

static bool mul_overflow(int64_t x, int64_t y, int64_t* r) {
    return __builtin_mul_overflow(x, y, r);
}
static bool add_overflow(int64_t x, int64_t y, int64_t* r) {
    return __builtin_add_overflow(x, y, r);
}
static bool sub_overflow(int64_t x, int64_t y, int64_t* r) {
    return __builtin_sub_overflow(x, y, r);
}

static Value int_pow(int64_t base, int64_t exp) {
    int64_t result = 1;
    while (exp > 0) {
        if (exp & 1) result = checked(mul_overflow, result, base);
        exp >>= 1;
        if (exp) base = checked(mul_overflow, base, base);
    }
    return Value::integer(result);
}

static Value float_pow(double a, double b) {
    if (a == 0.0 && b < 0.0) raise("0.0 cannot be raised to a negative power");
    if (a < 0.0 && b != std::floor(b)) raise("complex results are not supported");
    return Value::number(std::pow(a, b));
}

// Python's float % and // (the result takes the divisor's sign).
static double float_mod(double a, double b) {
    double mod = std::fmod(a, b);
    if (mod != 0.0) {
        if ((b < 0) != (mod < 0)) mod += b;
    } else {
        mod = std::copysign(0.0, b);
    }
    return mod;
}

static double float_floordiv(double a, double b) {
    const double mod = std::fmod(a, b);
    double div = (a - mod) / b;
    if (mod != 0.0 && ((b < 0) != (mod < 0))) div -= 1.0;
    if (div == 0.0) return std::copysign(0.0, a / b);
    const double floored = std::floor(div);
    return div - floored > 0.5 ? floored + 1.0 : floored;
}

static Value numeric_op(BinaryOp op, const Value& a, const Value& b) {
    if (a.is_integral() && b.is_integral()) {
        const int64_t x = a.as_int(), y = b.as_int();
        switch (op) {
            case BinaryOp::add:
                return Value::integer(checked(add_overflow, x, y));
            case BinaryOp::sub:
                return Value::integer(checked(sub_overflow, x, y));
            case BinaryOp::mul:
                return Value::integer(checked(mul_overflow, x, y));
            case BinaryOp::div:
                if (y == 0) raise("division by zero");
                return Value::number(double(x) / double(y));
            case BinaryOp::floordiv:
            case BinaryOp::mod: {
                if (y == 0)
                    raise("{}", op == BinaryOp::mod ? "integer modulo by zero"
                                                    : "integer division or modulo by zero");
                if (x == INT64_MIN && y == -1) raise("integer overflow");
                int64_t q = x / y, m = x % y;
                if (m != 0 && ((m < 0) != (y < 0))) --q, m += y;
                return Value::integer(op == BinaryOp::mod ? m : q);
            }
            case BinaryOp::pow:
                if (y < 0) return float_pow(double(x), double(y));
                return int_pow(x, y);
        }
    }
    const double x = a.as_float(), y = b.as_float();
    switch (op) {
        case BinaryOp::add:
            return Value::number(x + y);
        case BinaryOp::sub:
            return Value::number(x - y);
        case BinaryOp::mul:
            return Value::number(x * y);
        case BinaryOp::div:
            if (y == 0) raise("float division by zero");
            return Value::number(x / y);
        case BinaryOp::floordiv:
            if (y == 0) raise("float floor division by zero");
            return Value::number(float_floordiv(x, y));
        case BinaryOp::mod:
            if (y == 0) raise("float modulo");
            return Value::number(float_mod(x, y));
        case BinaryOp::pow:
            return float_pow(x, y);
    }
    return Value::none();
}

static Value repeat(const Value& seq, const Value& count) {
    const int64_t n = std::max<int64_t>(count.as_int(), 0);
    if (seq.is_string()) {
        const std::string& s = seq.as_string();
        if (n > 0 && !s.empty()) check_size(s.size() * std::min<uint64_t>(n, max_result_size + 1));
        std::string out;
        for (int64_t i = 0; i < n && !s.empty(); ++i) out += s;
        return Value::string(std::move(out));
    }
    const Array& a = seq.as_array();
    if (n > 0 && !a.items.empty())
        check_size(a.items.size() * std::min<uint64_t>(n, max_result_size + 1));
    std::vector<Value> out;
    for (int64_t i = 0; i < n; ++i) out.insert(out.end(), a.items.begin(), a.items.end());
    return a.is_tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

Value binary_op(BinaryOp op, const Value& a, const Value& b) {
    // str % x formats without touching x unless the format needs it.
    if (op == BinaryOp::mod && a.is_string())
        return Value::string(percent_format(a.as_string(), b));
    if (a.is_undefined()) raise_undefined(a);
    if (b.is_undefined()) raise_undefined(b);
    if (a.is_number() && b.is_number()) return numeric_op(op, a, b);
    if (op == BinaryOp::add) {
        if (a.is_string()) {
            if (!b.is_string()) raise("can only concatenate str (not \"{}\") to str", type_name(b));
            check_size(a.as_string().size() + b.as_string().size());
            return Value::string(a.as_string() + b.as_string());
        }
        if (a.is_array()) {
            if (!b.is_array() || a.is_tuple() != b.is_tuple())
                raise("can only concatenate {} (not \"{}\") to {}", type_name(a), type_name(b),
                      type_name(a));
            std::vector<Value> items = a.as_array().items;
            check_size(items.size() + b.as_array().items.size());
            items.insert(items.end(), b.as_array().items.begin(), b.as_array().items.end());
            return a.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
        }
    }
    if (op == BinaryOp::mul) {
        const bool a_seq = a.is_string() || a.is_array();
        const bool b_seq = b.is_string() || b.is_array();
        if (a_seq && b.is_integral()) return repeat(a, b);
        if (b_seq && a.is_integral()) return repeat(b, a);
        if (a_seq || b_seq)
            raise("can't multiply sequence by non-int of type '{}'", type_name(a_seq ? b : a));
    }
    unsupported(op, a, b);
}

Value negate(const Value& v) {
    if (v.is_undefined()) raise_undefined(v);
    if (v.is_integral()) {
        if (v.as_int() == INT64_MIN) raise("integer overflow");
        return Value::integer(-v.as_int());
    }
    if (v.is_float()) return Value::number(-v.as_float());
    raise("bad operand type for unary -: '{}'", type_name(v));
}

Value unary_plus(const Value& v) {
    if (v.is_undefined()) raise_undefined(v);
    if (v.is_integral()) return Value::integer(v.as_int());
    if (v.is_float()) return v;
    raise("bad operand type for unary +: '{}'", type_name(v));
}

static const char* compare_symbol(CompareOp op) {
    switch (op) {
        case CompareOp::lt:
            return "<";
        case CompareOp::le:
            return "<=";
        case CompareOp::gt:
            return ">";
        case CompareOp::ge:
            return ">=";
        default:
            return "==";
    }
}

static bool order(CompareOp op, const Value& a, const Value& b) {
    if (a.is_undefined()) raise_undefined(a);
    if (b.is_undefined()) raise_undefined(b);
    auto holds = [op](auto x, auto y) {
        switch (op) {
            case CompareOp::lt:
                return x < y;
            case CompareOp::le:
                return x <= y;
            case CompareOp::gt:
                return x > y;
            default:
                return x >= y;
        }
    };
    if (a.is_number() && b.is_number()) {
        if (a.is_integral() && b.is_integral()) return holds(a.as_int(), b.as_int());
        return holds(a.as_float(), b.as_float());
    }
    if (a.is_string() && b.is_string()) return holds(a.as_string(), b.as_string());
    if (a.is_array() && b.is_array() && a.is_tuple() == b.is_tuple()) {
        const auto& x = a.as_array().items;
        const auto& y = b.as_array().items;
        for (size_t i = 0; i < x.size() && i < y.size(); ++i)
            if (!equals(x[i], y[i])) return order(op, x[i], y[i]);
        return holds(x.size(), y.size());
    }
    raise("'{}' not supported between instances of '{}' and '{}'", compare_symbol(op), type_name(a),
          type_name(b));
}

bool less(const Value& a, const Value& b) {
    return order(CompareOp::lt, a, b);
}

bool compare(CompareOp op, const Value& a, const Value& b) {
    switch (op) {
        case CompareOp::eq:
            return equals(a, b);
        case CompareOp::ne:
            return !equals(a, b);
        case CompareOp::in:
            return contains(b, a);
        case CompareOp::not_in:
            return !contains(b, a);
        default:
            return order(op, a, b);
    }
}

bool contains(const Value& container, const Value& item) {
    switch (container.kind()) {
        case Kind::undefined:
            return false;
        case Kind::string:
            if (!item.is_string())
                raise("'in <string>' requires string as left operand, not {}", type_name(item));
            return container.as_string().find(item.as_string()) != std::string::npos;
        case Kind::array:
            for (const Value& v : container.as_array().items)
                if (equals(v, item)) return true;
            return false;
        case Kind::dict:
            require_hashable(item);
            return container.as_dict().find(item) != nullptr;
        case Kind::object:
            if (auto* g = dynamic_cast<Generator*>(&container.as_object())) {
                while (auto v = g->next())
                    if (equals(*v, item)) return true;
                return false;
            }
            [[fallthrough]];
        default:
            raise("argument of type '{}' is not iterable", type_name(container));
    }
}

static std::optional<Value> method_attribute(const Value& obj, std::string_view name) {
    switch (method_kind(obj, name)) {
        case MethodKind::safe:
            return Value::object(std::make_shared<BoundMethod>(obj, std::string(name)));
        case MethodKind::unsafe:
            return unsafe_method(obj, name);
        case MethodKind::none:
            break;
    }
    return std::nullopt;
}

Value get_attribute(const Value& obj, std::string_view name) {
    if (obj.is_undefined()) raise_undefined(obj);
    if (obj.is_object()) return obj.as_object().attribute(name);
    if (auto method = method_attribute(obj, name)) return *method;
    if (obj.is_dict())
        if (const Value* v = obj.as_dict().find(name)) return *v;
    return undefined_attribute(obj, name);
}

// Python's index normalisation: negative counts from the end; nullopt when out of range.
static std::optional<size_t> normalise_index(int64_t i, size_t n) {
    if (i < 0) i += static_cast<int64_t>(n);
    if (i < 0 || static_cast<size_t>(i) >= n) return std::nullopt;
    return static_cast<size_t>(i);
}

Value get_item(const Value& obj, const Value& key) {
    if (obj.is_undefined()) raise_undefined(obj);
    if (obj.is_dict()) {
        if (!key.is_array() && !key.is_dict())
            if (const Value* v = obj.as_dict().find(key)) return *v;
    } else if (obj.is_array() && key.is_integral()) {
        const auto& items = obj.as_array().items;
        if (auto i = normalise_index(key.as_int(), items.size())) return items[*i];
    } else if (obj.is_string() && key.is_integral()) {
        const std::string& s = obj.as_string();
        if (text::is_ascii(s)) {
            if (auto i = normalise_index(key.as_int(), s.size()))
                return Value::string(s.substr(*i, 1));
            return undefined_item(obj, key);
        }
        const auto at = text::boundaries(s);
        if (auto i = normalise_index(key.as_int(), at.size() - 1))
            return Value::string(s.substr(at[*i], at[*i + 1] - at[*i]));
    } else if (obj.is_object() && key.is_string()) {
        return obj.as_object().attribute(key.as_string());
    }
    if (key.is_string())
        if (auto method = method_attribute(obj, key.as_string())) return *method;
    return undefined_item(obj, key);
}

// Python's slice.indices(): the positions a slice visits in a sequence of n.
static std::vector<size_t> slice_positions(const Value& start, const Value& stop, const Value& step,
                                           size_t n) {
    const int64_t len = static_cast<int64_t>(n);
    const int64_t st = step.is_none() ? 1 : step.as_int();
    if (st == 0) raise("slice step cannot be zero");
    auto bound = [&](const Value& v, int64_t fallback) {
        if (v.is_none()) return fallback;
        int64_t i = v.as_int();
        if (i < 0) {
            i += len;
            if (i < 0) i = st < 0 ? -1 : 0;
        } else if (i >= len) {
            i = st < 0 ? len - 1 : len;
        }
        return i;
    };
    const int64_t from = bound(start, st < 0 ? len - 1 : 0);
    const int64_t to = bound(stop, st < 0 ? -1 : len);
    std::vector<size_t> out;
    for (int64_t i = from; st > 0 ? i < to : i > to; i += st) out.push_back(static_cast<size_t>(i));
    return out;
}

// Jinja2 compiles slices to plain Python subscripts: anything but a sequence raises.
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
    if (obj.is_undefined()) raise_undefined(obj);
    if (obj.is_dict()) raise("unhashable type: 'slice'");
    if (!obj.is_array() && !obj.is_string())
        raise("'{}' object is not subscriptable", type_name(obj));
    for (const Value* bound : {&start, &stop, &step}) {
        if (!bound->is_none() && !bound->is_integral())
            raise("slice indices must be integers or None or have an __index__ method");
    }
    if (obj.is_array()) {
        const Array& a = obj.as_array();
        std::vector<Value> items;
        for (size_t i : slice_positions(start, stop, step, a.items.size()))
            items.push_back(a.items[i]);
        return a.is_tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
    }
    const std::string& s = obj.as_string();
    const auto at = text::boundaries(s);
    std::string out;
    for (size_t i : slice_positions(start, stop, step, at.size() - 1))
        out.append(s, at[i], at[i + 1] - at[i]);
    return Value::string(std::move(out));
}

std::vector<Value> iterate(const Value& v) {
    switch (v.kind()) {
        case Kind::undefined:
            return {};
        case Kind::array:
            return v.as_array().items;
        case Kind::dict: {
            std::vector<Value> keys;
            for (const auto& [k, _] : v.as_dict().entries) keys.push_back(k);
            return keys;
        }
        case Kind::string: {
            std::vector<Value> chars;
            const std::string& s = v.as_string();
            for (size_t i = 0; i < s.size();) {
                const size_t start = i;
                text::decode(s, i);
                chars.push_back(Value::string(s.substr(start, i - start)));
            }
            return chars;
        }
        case Kind::object:
            if (auto* g = dynamic_cast<Generator*>(&v.as_object())) {
                std::vector<Value> items;
                while (auto item = g->next()) items.push_back(std::move(*item));
                return items;
            }
            [[fallthrough]];
        default:
            raise("'{}' object is not iterable", type_name(v));
    }
}

size_t length(const Value& v) {
    switch (v.kind()) {
        case Kind::undefined:
            return 0;
        case Kind::string:
            return text::length(v.as_string());
        case Kind::array:
            return v.as_array().items.size();
        case Kind::dict:
            return v.as_dict().entries.size();
        default:
            raise("object of type '{}' has no len()", type_name(v));
    }
}

}  // namespace anelm::jinja
