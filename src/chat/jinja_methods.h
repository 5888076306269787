// Python methods of str, list, tuple and dict values ("a,b".split(","),
// message.get("content"), d.items()). Methods that mutate are refused, as in
// Jinja2's ImmutableSandboxedEnvironment.
#pragma once

#include <string>
#include <string_view>

#include "chat/jinja_value.h"

namespace anelm::jinja {

enum class MethodKind { none, safe, unsafe };

// Whether Python's type of `self` has a method `name`, and whether it mutates.
MethodKind method_kind(const Value& self, std::string_view name);

// Calls a safe method.
Value call_method(const Value& self, std::string_view name, CallArgs& args);

// The undefined value an unsafe method looks up as: using it raises.
Value unsafe_method(const Value& self, std::string_view name);

// `self.name` for a method, ready to be called later.
class BoundMethod : public Object {
public:
    BoundMethod(Value self, std::string name) : self_(std::move(self)), name_(std::move(name)) {}
    std::string type_name() const override { return "builtin_function_or_method"; }
    bool is_callable() const override { return true; }
    Value call(Interpreter&, CallArgs& args) override { return call_method(self_, name_, args); }
    std::string repr() const override;

private:
    Value self_;
    std::string name_;
};

}  // namespace anelm::jinja
