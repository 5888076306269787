#include "chat/jinja_template.h"

#include "base/error.h"
#include "chat/jinja_error.h"
#include "chat/jinja_interpreter.h"
#include "chat/jinja_lexer.h"
#include "chat/jinja_parser.h"
#include "chat/jinja_scope.h"

namespace anelm::jinja {

Value from_json(const nlohmann::ordered_json& j) {
    using Type = nlohmann::ordered_json::value_t;
    switch (j.type()) {
        case Type::null: return Value::none();
        case Type::boolean: return Value::boolean(j.get<bool>());
        case Type::number_integer: return Value::integer(j.get<int64_t>());
        case Type::number_unsigned: {
            const auto u = j.get<uint64_t>();
            if (u > static_cast<uint64_t>(INT64_MAX)) return Value::number(static_cast<double>(u));
            return Value::integer(static_cast<int64_t>(u));
        }
        case Type::number_float: return Value::number(j.get<double>());
        case Type::string: return Value::string(j.get<std::string>());
        case Type::array: {
            std::vector<Value> items;
            items.reserve(j.size());
            for (const auto& item : j) items.push_back(from_json(item));
            return Value::list(std::move(items));
        }
        case Type::object: {
            Dict d;
            d.entries.reserve(j.size());
            for (const auto& [k, v] : j.items()) d.entries.emplace_back(Value::string(k), from_json(v));
            return Value::dict(std::move(d));
        }
        default: return Value::none();
    }
}

// Runs `f`, turning the interpreter's failures into anelm::Error naming the template.
template <typename F>
static auto with_location(const std::string& name, F f) {
    try {
        return f();
    } catch (const Failure& e) {
        if (e.line > 0) throw Error(fmt::format("{}:{}: {}", name, e.line, e.what()));
        throw Error(fmt::format("{}: {}", name, e.what()));
    } catch (const Error&) {
        throw;
    } catch (const std::exception& e) {
        throw Error(fmt::format("{}: {}", name, e.what()));
    }
}

Template::Template(std::string_view source, std::string name) : name_(std::move(name)) {
    body_ = with_location(name_, [&] { return parse(tokenize(source)); });
    unset_ = analyze_scopes(body_);
}

std::string Template::render(const nlohmann::ordered_json& variables) const {
    if (!variables.is_object()) throw Error(fmt::format("{}: template variables must be a JSON object", name_));
    std::vector<std::pair<std::string, Value>> vars;
    for (const auto& [k, v] : variables.items()) vars.emplace_back(k, from_json(v));
    return render(std::move(vars));
}

std::string Template::render(std::vector<std::pair<std::string, Value>> variables) const {
    return with_location(name_, [&] {
        Interpreter interp(std::move(variables));
        return interp.run(body_, unset_);
    });
}

}  // namespace anelm::jinja
