// Values of the template language: Python's data model as Jinja2 sees it (None,
// bool, int, float, str, list, tuple, dict, Undefined and a few objects).
// Lists, tuples and dicts are immutable and shared, as the sandbox
// transformers renders in forbids changing them; only objects mutate.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace anelm::jinja {

class Interpreter;
class Object;
struct Value;

struct None {};

// A missing name, attribute or item. It prints as "", iterates as nothing and
// is false; most other uses raise `message` (Jinja2's default Undefined).
struct Undefined {
    std::string message;
};

struct Array {
    std::vector<Value> items;
    bool is_tuple = false;
};

struct Dict {
    std::vector<std::pair<Value, Value>> entries;  // in insertion order

    const Value* find(const Value& key) const;
    const Value* find(std::string_view key) const;
    void set(Value key, Value value);  // replaces an equal key in place, else appends
};

using StringPtr = std::shared_ptr<const std::string>;  // shared: copying a value is O(1)
using ArrayPtr = std::shared_ptr<const Array>;
using DictPtr = std::shared_ptr<const Dict>;
using ObjectPtr = std::shared_ptr<Object>;

enum class Kind : uint8_t {
    undefined,
    none,
    boolean,
    integer,
    floating,
    string,
    array,
    dict,
    object
};

struct Value {
    std::variant<Undefined, None, bool, int64_t, double, StringPtr, ArrayPtr, DictPtr, ObjectPtr>
        data;

    static Value undefined(std::string message) { return {Undefined{std::move(message)}}; }
    static Value none() { return {None{}}; }
    static Value boolean(bool b) { return {b}; }
    static Value integer(int64_t i) { return {i}; }
    static Value number(double d) { return {d}; }
    static Value string(std::string s) {
        return {std::make_shared<const std::string>(std::move(s))};
    }
    static Value list(std::vector<Value> items);
    static Value tuple(std::vector<Value> items);
    static Value dict(Dict d);
    static Value object(ObjectPtr o) { return {std::move(o)}; }

    Kind kind() const { return static_cast<Kind>(data.index()); }
    bool is_undefined() const { return kind() == Kind::undefined; }
    bool is_none() const { return kind() == Kind::none; }
    bool is_bool() const { return kind() == Kind::boolean; }
    bool is_int() const { return kind() == Kind::integer; }
    bool is_float() const { return kind() == Kind::floating; }
    bool is_string() const { return kind() == Kind::string; }
    bool is_array() const { return kind() == Kind::array; }
    bool is_list() const { return is_array() && !as_array().is_tuple; }
    bool is_tuple() const { return is_array() && as_array().is_tuple; }
    bool is_dict() const { return kind() == Kind::dict; }
    bool is_object() const { return kind() == Kind::object; }
    // Python's int includes bool; numbers include both and float.
    bool is_integral() const { return is_int() || is_bool(); }
    bool is_number() const { return is_integral() || is_float(); }

    bool as_bool() const { return std::get<bool>(data); }
    int64_t as_int() const { return is_bool() ? as_bool() : std::get<int64_t>(data); }
    double as_float() const { return is_float() ? std::get<double>(data) : double(as_int()); }
    const std::string& as_string() const { return *std::get<StringPtr>(data); }
    const Array& as_array() const { return *std::get<ArrayPtr>(data); }
    const Dict& as_dict() const { return *std::get<DictPtr>(data); }
    Object& as_object() const { return *std::get<ObjectPtr>(data); }
    const ObjectPtr& object_ptr() const { return std::get<ObjectPtr>(data); }
    const std::string& undefined_message() const { return std::get<Undefined>(data).message; }
};

// Arguments of a call: positional values, then name=value pairs.
struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;
};

// Objects with behaviour of their own (namespace, loop, macros, functions).
class Object {
public:
    virtual ~Object() = default;
    virtual std::string type_name() const = 0;  // Python's type name, for messages
    virtual Value attribute(std::string_view name);
    virtual bool is_callable() const { return false; }
    virtual Value call(Interpreter& interp, CallArgs& args);
    virtual std::string repr() const;
    virtual bool truthy() const { return true; }
    // Drops references to other values, so cycles made through mutable objects
    // do not outlive a render.
    virtual void release() {}
};

// Python's bool(value).
bool truthy(const Value& v);

// Python's type(value).__name__: 'str', 'int', 'NoneType', 'Undefined', ...
std::string type_name(const Value& v);

// Jinja2's object_type_repr: "None" or "dict object", used in undefined messages.
std::string object_type_repr(const Value& v);

// Python's ==; never raises.
bool equals(const Value& a, const Value& b);

// Raises TypeError unless the value can be a dict key.
void require_hashable(const Value& v);

// Raises the error an undefined value carries.
[[noreturn]] void raise_undefined(const Value& v);

// The undefined values Jinja2 makes for missing names, attributes and items.
Value undefined_name(std::string_view name);
Value undefined_attribute(const Value& owner, std::string_view name);
Value undefined_item(const Value& owner, const Value& key);

}  // namespace anelm::jinja
