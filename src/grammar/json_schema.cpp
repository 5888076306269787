// JSON Schema -> Grammar. What is generated is always valid against the schema,
// though not every valid document can be generated: properties come in schema
// order, listed properties only (what other constrained decoders do when
// additionalProperties is absent), compact enum values, oneOf read as anyOf.
#include <algorithm>
#include <map>
#include <set>

#include "base/error.h"
#include "grammar/grammar.h"

namespace anelm::grammar {

namespace {

using ojson = nlohmann::ordered_json;

// Keywords that narrow what is valid in ways this compiler cannot generate.
const std::set<std::string> refused = {"pattern",
                                       "patternProperties",
                                       "minimum",
                                       "maximum",
                                       "exclusiveMinimum",
                                       "exclusiveMaximum",
                                       "multipleOf",
                                       "not",
                                       "if",
                                       "then",
                                       "else",
                                       "dependentRequired",
                                       "dependentSchemas",
                                       "dependencies",
                                       "propertyNames",
                                       "minProperties",
                                       "maxProperties",
                                       "uniqueItems",
                                       "contains",
                                       "minContains",
                                       "maxContains",
                                       "prefixItems",
                                       "additionalItems",
                                       "unevaluatedProperties",
                                       "unevaluatedItems",
                                       "$dynamicRef",
                                       "$recursiveRef",
                                       "contentSchema"};

// Keywords that only describe (format is a hint the validator need not check).
const std::set<std::string> annotations = {
    "title",    "description", "default",          "examples",       "format",      "$schema",
    "$id",      "$comment",    "$anchor",          "$defs",          "definitions", "deprecated",
    "readOnly", "writeOnly",   "contentMediaType", "contentEncoding"};

std::string escape_key(const std::string& key) {
    return ojson(key).dump();
}

class Compiler {
public:
    Compiler(const ojson* root, std::string root_path)
        : root_(root), root_path_(std::move(root_path)) {
        Node s;
        s.kind = Kind::string;
        data_.plain_string = add(std::move(s));
    }

    int32_t compile(const ojson& s, const std::string& path);
    int32_t any_value();
    int32_t add(Node n) {
        data_.nodes.push_back(std::move(n));
        return static_cast<int32_t>(data_.nodes.size() - 1);
    }
    Grammar finish(int32_t root);

private:
    int32_t compile_ref(const ojson& s, const std::string& path);
    int32_t compile_literals(const ojson& s, const std::string& path);
    int32_t compile_type(const std::string& type, const ojson& s, const std::string& path);
    int32_t compile_object(const ojson& s, const std::string& path);
    int32_t compile_array(const ojson& s, const std::string& path);
    int32_t any_of(std::vector<int32_t> options, const std::string& path);
    void flatten(int32_t id, std::vector<int32_t>& out, std::vector<bool>& seen) const;

    const ojson* root_;
    std::string root_path_;
    Grammar::Data data_;
    std::map<std::string, int32_t> refs_;
    std::map<int32_t, std::string> any_of_paths_;
    int32_t any_ = -1;
    static constexpr int max_depth = 64;
    int depth_ = 0;
};

uint32_t count_field(const ojson& s, const char* key, uint32_t absent, const std::string& path) {
    if (!s.contains(key)) return absent;
    const ojson& v = s[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
        fail("{}.{}: expected a non-negative integer", path, key);
    return static_cast<uint32_t>(std::min<int64_t>(v.get<int64_t>(), unbounded - 1));
}

bool has_any(const ojson& s, std::initializer_list<const char*> keys) {
    for (const char* k : keys)
        if (s.contains(k)) return true;
    return false;
}

int32_t Compiler::compile(const ojson& s, const std::string& path) {
    // Nesting and chains of references recurse here (and in flatten) once per level.
    struct Nest {
        explicit Nest(int& depth) : depth(depth) { ++depth; }
        ~Nest() { --depth; }
        int& depth;
    } nest(depth_);
    if (depth_ > max_depth)
        fail("{}: the schema nests more than {} levels deep (references included)", path,
             max_depth);
    if (s.is_boolean()) {
        if (!s.get<bool>()) fail("{}: schema false matches nothing", path);
        return any_value();
    }
    if (!s.is_object()) fail("{}: expected a schema object", path);
    for (const auto& [key, value] : s.items())
        if (refused.count(key)) fail("{}: unsupported keyword \"{}\"", path, key);
    if (s.contains("$ref")) return compile_ref(s, path);
    if (s.contains("allOf")) {
        const ojson& all = s["allOf"];
        if (!all.is_array() || all.size() != 1 ||
            has_any(s, {"type", "properties", "items", "enum", "const", "anyOf", "oneOf"}))
            fail("{}.allOf: only a single schema with nothing beside it is supported", path);
        return compile(all[0], path + ".allOf[0]");
    }
    if (s.contains("enum") || s.contains("const")) return compile_literals(s, path);
    for (const char* key : {"anyOf", "oneOf"}) {
        if (!s.contains(key)) continue;
        const ojson& list = s[key];
        if (!list.is_array() || list.empty()) fail("{}.{}: expected a non-empty array", path, key);
        if (s.contains("type")) fail("{}: \"type\" beside \"{}\" is not supported", path, key);
        std::vector<int32_t> options;
        for (size_t i = 0; i < list.size(); ++i)
            options.push_back(compile(list[i], fmt::format("{}.{}[{}]", path, key, i)));
        return any_of(std::move(options), path);
    }
    if (!s.contains("type")) {
        if (has_any(s, {"properties", "required", "additionalProperties"}))
            return compile_object(s, path);
        if (has_any(s, {"items", "minItems", "maxItems"})) return compile_array(s, path);
        if (has_any(s, {"minLength", "maxLength"})) return compile_type("string", s, path);
        return any_value();
    }
    const ojson& type = s["type"];
    if (type.is_string()) return compile_type(type.get<std::string>(), s, path);
    if (!type.is_array() || type.empty())
        fail("{}.type: expected a type name or a non-empty array of them", path);
    std::vector<int32_t> options;
    for (size_t i = 0; i < type.size(); ++i) {
        if (!type[i].is_string()) fail("{}.type[{}]: expected a type name", path, i);
        options.push_back(compile_type(type[i].get<std::string>(), s, path));
    }
    return any_of(std::move(options), path);
}

int32_t Compiler::compile_type(const std::string& type, const ojson& s, const std::string& path) {
    Node n;
    if (type == "object") return compile_object(s, path);
    if (type == "array") return compile_array(s, path);
    if (type == "string") {
        n.kind = Kind::string;
        n.min_length = count_field(s, "minLength", 0, path);
        n.max_length = count_field(s, "maxLength", unbounded, path);
        if (n.min_length > n.max_length) fail("{}: minLength is above maxLength", path);
    } else if (type == "number" || type == "integer") {
        n.kind = type == "number" ? Kind::number : Kind::integer;
    } else if (type == "boolean") {
        n.kind = Kind::literals;
        n.literals = {"false", "true"};
    } else if (type == "null") {
        n.kind = Kind::literals;
        n.literals = {"null"};
    } else {
        fail("{}.type: unknown type \"{}\"", path, type);
    }
    return add(std::move(n));
}

// enum and const: the values as compact JSON text, those of the wrong type dropped.
int32_t Compiler::compile_literals(const ojson& s, const std::string& path) {
    std::vector<ojson> values;
    if (s.contains("const")) values.push_back(s["const"]);
    if (s.contains("enum")) {
        if (!s["enum"].is_array()) fail("{}.enum: expected an array", path);
        for (const ojson& v : s["enum"])
            if (!s.contains("const") || v == s["const"]) values.push_back(v);
    }
    std::set<std::string> types;
    if (s.contains("type")) {
        const ojson& t = s["type"];
        for (const ojson& name : t.is_array() ? t : ojson::array({t}))
            if (name.is_string()) types.insert(name.get<std::string>());
    }
    auto type_ok = [&](const ojson& v) {
        if (types.empty()) return true;
        if (v.is_number_integer() && types.count("integer")) return true;
        if (v.is_number_float() && types.count("integer") && v.get<double>() == int64_t(v))
            return true;
        static const std::map<ojson::value_t, std::string> names = {
            {ojson::value_t::object, "object"},
            {ojson::value_t::array, "array"},
            {ojson::value_t::string, "string"},
            {ojson::value_t::boolean, "boolean"},
            {ojson::value_t::null, "null"},
            {ojson::value_t::number_integer, "number"},
            {ojson::value_t::number_unsigned, "number"},
            {ojson::value_t::number_float, "number"}};
        return types.count(names.at(v.type())) > 0;
    };
    Node n;
    n.kind = Kind::literals;
    for (const ojson& v : values)
        if (type_ok(v)) n.literals.push_back(v.dump());
    std::sort(n.literals.begin(), n.literals.end());
    n.literals.erase(std::unique(n.literals.begin(), n.literals.end()), n.literals.end());
    if (n.literals.empty()) fail("{}: enum/const leaves no value", path);
    return add(std::move(n));
}

int32_t Compiler::compile_object(const ojson& s, const std::string& path) {
    Node n;
    n.kind = Kind::object;
    const ojson empty = ojson::object();
    const ojson& props = s.contains("properties") ? s["properties"] : empty;
    if (!props.is_object()) fail("{}.properties: expected an object", path);
    for (const auto& [name, sub] : props.items())
        n.properties.push_back({escape_key(name), -1, false});
    if (s.contains("required")) {
        const ojson& req = s["required"];
        if (!req.is_array()) fail("{}.required: expected an array of names", path);
        for (const ojson& name : req) {
            if (!name.is_string()) fail("{}.required: expected an array of names", path);
            const std::string key = escape_key(name.get<std::string>());
            auto it = std::find_if(n.properties.begin(), n.properties.end(),
                                   [&](const Property& p) { return p.key == key; });
            if (it == n.properties.end())
                fail("{}.required: \"{}\" is not in properties", path, name.get<std::string>());
            it->required = true;
        }
    }
    if (n.properties.empty()) {
        const ojson extra =
            s.contains("additionalProperties") ? s["additionalProperties"] : ojson(true);
        if (!(extra.is_boolean() && !extra.get<bool>()))
            n.extra = compile(extra, path + ".additionalProperties");
    }
    const size_t count = n.properties.size();
    n.first_required.assign(count + 1, static_cast<uint32_t>(count));
    for (size_t i = count; i-- > 0;)
        n.first_required[i] = n.properties[i].required ? i : n.first_required[i + 1];
    std::vector<uint32_t> order(count);
    for (uint32_t i = 0; i < count; ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](uint32_t a, uint32_t b) { return n.properties[a].key < n.properties[b].key; });
    for (uint32_t i : order) {
        n.literals.push_back(n.properties[i].key);
        n.key_props.push_back(i);
    }
    // The node exists before its properties so that they may refer back to it.
    const int32_t id = add(std::move(n));
    size_t i = 0;
    for (const auto& [name, sub] : props.items()) {
        const int32_t value = compile(sub, path + ".properties." + name);
        data_.nodes[id].properties[i++].value = value;
    }
    return id;
}

int32_t Compiler::compile_array(const ojson& s, const std::string& path) {
    Node n;
    n.kind = Kind::array;
    n.min_items = count_field(s, "minItems", 0, path);
    n.max_items = count_field(s, "maxItems", unbounded, path);
    if (n.min_items > n.max_items) fail("{}: minItems is above maxItems", path);
    if (s.contains("items") && s["items"].is_array())
        fail("{}.items: the array (tuple) form is not supported", path);
    const int32_t items = s.contains("items") ? compile(s["items"], path + ".items") : any_value();
    n.items = items;
    return add(std::move(n));
}

// "#", "#/$defs/Name", "#/definitions/Name" or any other pointer into the root.
int32_t Compiler::compile_ref(const ojson& s, const std::string& path) {
    for (const auto& [key, value] : s.items())
        if (key != "$ref" && !annotations.count(key))
            fail("{}: \"{}\" beside \"$ref\" is not supported", path, key);
    if (!s["$ref"].is_string()) fail("{}.$ref: expected a string", path);
    const std::string target = s["$ref"].get<std::string>();
    if (const auto it = refs_.find(target); it != refs_.end()) return it->second;
    if (!root_ || !target.starts_with("#"))
        fail("{}.$ref: \"{}\" is not a reference into this schema", path, target);
    const ojson* sub = nullptr;
    try {
        sub = &root_->at(ojson::json_pointer(target.substr(1)));
    } catch (const nlohmann::json::exception&) {
        fail("{}.$ref: \"{}\" is not in this schema", path, target);
    }
    // A placeholder first, so that a recursive reference finds it.
    const int32_t id = any_of({}, path);
    refs_[target] = id;
    std::string sub_path = target.substr(1);
    std::replace(sub_path.begin(), sub_path.end(), '/', '.');
    const int32_t inner = compile(*sub, root_path_ + sub_path);
    data_.nodes[id].options = {inner};
    return id;
}

int32_t Compiler::any_of(std::vector<int32_t> options, const std::string& path) {
    Node n;
    n.kind = Kind::any_of;
    n.options = std::move(options);
    const int32_t id = add(std::move(n));
    any_of_paths_[id] = path;
    return id;
}

// Any JSON value: free objects and arrays of any values, strings, numbers, literals.
int32_t Compiler::any_value() {
    if (any_ >= 0) return any_;
    any_ = any_of({}, "");
    Node object, array, string, number, literals;
    object.kind = Kind::object;
    object.extra = any_;
    object.first_required = {0};
    array.kind = Kind::array;
    array.items = any_;
    string.kind = Kind::string;
    number.kind = Kind::number;
    literals.kind = Kind::literals;
    literals.literals = {"false", "null", "true"};
    std::vector<int32_t> options;
    for (Node* n : {&object, &array, &string, &number, &literals})
        options.push_back(add(std::move(*n)));
    data_.nodes[any_].options = std::move(options);
    return any_;
}

void Compiler::flatten(int32_t id, std::vector<int32_t>& out, std::vector<bool>& seen) const {
    if (seen[id]) return;
    seen[id] = true;
    const Node& n = data_.nodes[id];
    if (n.kind != Kind::any_of) {
        out.push_back(id);
        return;
    }
    for (int32_t o : n.options) flatten(o, out, seen);
}

// Alternatives of alternatives become one list of concrete nodes.
Grammar Compiler::finish(int32_t root) {
    std::vector<std::vector<int32_t>> flat(data_.nodes.size());
    for (size_t id = 0; id < data_.nodes.size(); ++id) {
        if (data_.nodes[id].kind != Kind::any_of) continue;
        std::vector<bool> seen(data_.nodes.size());
        flatten(static_cast<int32_t>(id), flat[id], seen);
        if (flat[id].empty()) fail("{}: the schema refers only to itself", any_of_paths_[id]);
    }
    for (size_t id = 0; id < data_.nodes.size(); ++id)
        if (data_.nodes[id].kind == Kind::any_of) data_.nodes[id].options = std::move(flat[id]);
    data_.root = root;
    return Grammar(std::make_shared<const Grammar::Data>(std::move(data_)));
}

}  // namespace

Grammar Grammar::from_json_schema(const nlohmann::ordered_json& schema, const std::string& where) {
    Compiler c(&schema, where);
    return c.finish(c.compile(schema, where));
}

Grammar Grammar::any_object() {
    Compiler c(nullptr, "json_object");
    Node object;
    object.kind = Kind::object;
    object.extra = c.any_value();
    object.first_required = {0};
    return c.finish(c.add(std::move(object)));
}

}  // namespace anelm::grammar
