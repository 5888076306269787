// Objects templates create through globals: namespace() and built-in functions.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "chat/jinja_value.h"

namespace anelm::jinja {

// namespace(a=1): the one mutable value, assigned with {% set ns.a = ... %}.
class Namespace : public Object {
public:
    std::string type_name() const override { return "Namespace"; }
    Value attribute(std::string_view name) override;
    std::string repr() const override;
    void release() override { attrs_.entries.clear(); }
    void set(std::string name, Value value) {
        attrs_.set(Value::string(std::move(name)), std::move(value));
    }

private:
    Dict attrs_;
};

// A built-in global function (range, namespace, raise_exception, ...).
class Function : public Object {
public:
    using Fn = Value (*)(Interpreter& interp, CallArgs& args);
    Function(std::string name, Fn fn) : name_(std::move(name)), fn_(fn) {}
    std::string type_name() const override { return "function"; }
    bool is_callable() const override { return true; }
    Value call(Interpreter& interp, CallArgs& args) override { return fn_(interp, args); }
    std::string repr() const override { return "<function " + name_ + ">"; }

private:
    std::string name_;
    Fn fn_;
};

// A Python iterator, as filters such as map and select return: always true, no
// len(), items computed when pulled and yielded only once.
class Generator : public Object {
public:
    using Next = std::function<std::optional<Value>()>;  // nullopt: exhausted
    // `type` is Python's type name ("generator", "list_reverseiterator"); `name`
    // the generator function's, shown by repr.
    Generator(std::string type, std::string name, Next next)
        : type_(std::move(type)), name_(std::move(name)), next_(std::move(next)) {}
    std::string type_name() const override { return type_; }
    std::string repr() const override;
    void release() override { next_ = nullptr; }

    std::optional<Value> next();

private:
    std::string type_;
    std::string name_;
    Next next_;
};

// An iterator over the items of any iterable, pulling generators one item at a time.
class Cursor {
public:
    explicit Cursor(const Value& iterable);  // raises for values Python cannot iterate
    std::optional<Value> next();

private:
    std::vector<Value> items_;
    size_t pos_ = 0;
    std::shared_ptr<Object> generator_;
};

}  // namespace anelm::jinja
