// Objects templates create through globals: namespace() and built-in functions.
#pragma once

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
    void set(std::string name, Value value) { attrs_.set(Value::string(std::move(name)), std::move(value)); }

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

}  // namespace anelm::jinja
