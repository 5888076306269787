#include "chat/jinja_template.h"

#include "base/error.h"
#include "chat/jinja_error.h"
#include "chat/jinja_interpreter.h"
#include "chat/jinja_json.h"
#include "chat/jinja_lexer.h"
#include "chat/jinja_parser.h"
#include "chat/jinja_scope.h"

namespace anelm::jinja {

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
    if (!variables.is_object())
        throw Error(fmt::format("{}: template variables must be a JSON object", name_));
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
