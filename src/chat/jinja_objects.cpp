#include "chat/jinja_objects.h"

#include "chat/jinja_format.h"

namespace anelm::jinja {

Value Namespace::attribute(std::string_view name) {
    if (const Value* v = attrs_.find(name)) return *v;
    return Object::attribute(name);
}

std::string Namespace::repr() const {
    std::string out = "<Namespace {";
    for (size_t i = 0; i < attrs_.entries.size(); ++i) {
        if (i) out += ", ";
        out += py_repr(attrs_.entries[i].first) + ": " + py_repr(attrs_.entries[i].second);
    }
    return out + "}>";
}

}  // namespace anelm::jinja
