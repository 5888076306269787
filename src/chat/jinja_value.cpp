#include "chat/jinja_value.h"

#include "chat/jinja_error.h"
#include "chat/jinja_format.h"

namespace anelm::jinja {

const Value* Dict::find(const Value& key) const {
    for (const auto& [k, v] : entries)
        if (equals(k, key)) return &v;
    return nullptr;
}

const Value* Dict::find(std::string_view key) const {
    for (const auto& [k, v] : entries)
        if (k.is_string() && k.as_string() == key) return &v;
    return nullptr;
}

void Dict::set(Value key, Value value) {
    for (auto& [k, v] : entries) {
        if (equals(k, key)) {
            v = std::move(value);
            return;
        }
    }
    entries.emplace_back(std::move(key), std::move(value));
}

Value Value::list(std::vector<Value> items) {
    return {std::make_shared<const Array>(Array{std::move(items), false})};
}

Value Value::tuple(std::vector<Value> items) {
    return {std::make_shared<const Array>(Array{std::move(items), true})};
}

Value Value::dict(Dict d) {
    return {std::make_shared<const Dict>(std::move(d))};
}

Value Object::attribute(std::string_view name) {
    return Value::undefined(
        fmt::format("'{} object' has no attribute {}", type_name(), string_repr(name)));
}

Value Object::call(Interpreter&, CallArgs&) {
    raise("'{}' object is not callable", type_name());
}

std::string Object::repr() const {
    return fmt::format("<{} object>", type_name());
}

bool truthy(const Value& v) {
    switch (v.kind()) {
        case Kind::undefined:
        case Kind::none:
            return false;
        case Kind::boolean:
            return v.as_bool();
        case Kind::integer:
            return v.as_int() != 0;
        case Kind::floating:
            return v.as_float() != 0.0;
        case Kind::string:
            return !v.as_string().empty();
        case Kind::array:
            return !v.as_array().items.empty();
        case Kind::dict:
            return !v.as_dict().entries.empty();
        case Kind::object:
            return v.as_object().truthy();
    }
    return false;
}

std::string type_name(const Value& v) {
    switch (v.kind()) {
        case Kind::undefined:
            return "Undefined";
        case Kind::none:
            return "NoneType";
        case Kind::boolean:
            return "bool";
        case Kind::integer:
            return "int";
        case Kind::floating:
            return "float";
        case Kind::string:
            return "str";
        case Kind::array:
            return v.as_array().is_tuple ? "tuple" : "list";
        case Kind::dict:
            return "dict";
        case Kind::object:
            return v.as_object().type_name();
    }
    return "object";
}

std::string object_type_repr(const Value& v) {
    if (v.is_none()) return "None";
    return type_name(v) + " object";
}

bool equals(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_float() == b.as_float();
        return a.as_int() == b.as_int();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Kind::undefined:
        case Kind::none:
            return true;
        case Kind::string:
            return a.as_string() == b.as_string();
        case Kind::array: {
            const Array& x = a.as_array();
            const Array& y = b.as_array();
            if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
            for (size_t i = 0; i < x.items.size(); ++i)
                if (!equals(x.items[i], y.items[i])) return false;
            return true;
        }
        case Kind::dict: {
            const Dict& x = a.as_dict();
            const Dict& y = b.as_dict();
            if (x.entries.size() != y.entries.size()) return false;
            for (const auto& [k, v] : x.entries) {
                const Value* other = y.find(k);
                if (!other || !equals(v, *other)) return false;
            }
            return true;
        }
        case Kind::object:
            return a.object_ptr() == b.object_ptr();
        default:
            return false;
    }
}

void require_hashable(const Value& v) {
    if (v.is_array() && v.as_array().is_tuple) {
        for (const Value& item : v.as_array().items) require_hashable(item);
        return;
    }
    if (v.is_array() || v.is_dict()) raise("unhashable type: '{}'", type_name(v));
}

void raise_undefined(const Value& v) {
    throw Failure(v.undefined_message());
}

Value undefined_name(std::string_view name) {
    return Value::undefined(fmt::format("{} is undefined", string_repr(name)));
}

Value undefined_attribute(const Value& owner, std::string_view name) {
    return Value::undefined(fmt::format("{} has no attribute {}",
                                        string_repr(object_type_repr(owner)), string_repr(name)));
}

Value undefined_item(const Value& owner, const Value& key) {
    if (key.is_string()) return undefined_attribute(owner, key.as_string());
    return Value::undefined(
        fmt::format("{} has no element {}", object_type_repr(owner), py_repr(key)));
}

}  // namespace anelm::jinja
