#include "tokenizer/json_fields.h"

#include "base/error.h"

namespace anelm {

namespace {

const nlohmann::json* member(const nlohmann::json& j, const char* key, const std::string& where) {
    if (!j.is_object()) fail("{}: expected a JSON object", where);
    const auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace

std::string type_field(const nlohmann::json& j, const std::string& where) {
    return string_field(j, "type", where);
}

std::string string_field(const nlohmann::json& j, const char* key, const std::string& where) {
    const nlohmann::json* v = member(j, key, where);
    if (!v || !v->is_string()) fail("{}.{}: expected a string", where, key);
    return v->get<std::string>();
}

bool bool_field(const nlohmann::json& j, const char* key, bool fallback, const std::string& where) {
    const nlohmann::json* v = member(j, key, where);
    if (!v) return fallback;
    if (!v->is_boolean()) fail("{}.{}: expected true or false", where, key);
    return v->get<bool>();
}

int64_t int_field(const nlohmann::json& j, const char* key, int64_t fallback,
                  const std::string& where) {
    const nlohmann::json* v = member(j, key, where);
    if (!v) return fallback;
    if (!v->is_number_integer()) fail("{}.{}: expected an integer", where, key);
    return v->get<int64_t>();
}

const nlohmann::json& array_field(const nlohmann::json& j, const char* key,
                                  const std::string& where) {
    const nlohmann::json* v = member(j, key, where);
    if (!v || !v->is_array()) fail("{}.{}: expected an array", where, key);
    return *v;
}

std::unique_ptr<Regex> pattern_field(const nlohmann::json& j, const std::string& where) {
    const std::string field = where + ".pattern";
    const nlohmann::json* p = member(j, "pattern", where);
    if (!p || !p->is_object())
        fail("{}: expected {{\"String\": ...}} or {{\"Regex\": ...}}", field);
    if (p->contains("String")) {
        const std::string literal = string_field(*p, "String", field);
        if (literal.empty()) return nullptr;
        return std::make_unique<Regex>(escape_regex(literal), field);
    }
    if (p->contains("Regex"))
        return std::make_unique<Regex>(string_field(*p, "Regex", field), field);
    fail("{}: expected {{\"String\": ...}} or {{\"Regex\": ...}}", field);
}

}  // namespace anelm
