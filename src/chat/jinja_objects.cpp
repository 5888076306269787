#include "chat/jinja_objects.h"

#include "chat/jinja_format.h"
#include "chat/jinja_ops.h"

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

std::string Generator::repr() const {
    if (type_ == "generator") return "<generator object " + name_ + ">";
    return "<" + type_ + " object>";
}

std::optional<Value> Generator::next() {
    if (!next_) return std::nullopt;
    std::optional<Value> v = next_();
    if (!v) next_ = nullptr;  // exhausted for good, like a Python generator
    return v;
}

Cursor::Cursor(const Value& iterable) {
    if (iterable.is_object() && dynamic_cast<Generator*>(&iterable.as_object())) {
        generator_ = iterable.object_ptr();
    } else {
        items_ = iterate(iterable);
    }
}

std::optional<Value> Cursor::next() {
    if (generator_) return static_cast<Generator&>(*generator_).next();
    if (pos_ >= items_.size()) return std::nullopt;
    return std::move(items_[pos_++]);
}

}  // namespace anelm::jinja
