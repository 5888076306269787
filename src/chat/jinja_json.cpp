#include "chat/jinja_json.h"

#include <algorithm>
#include <cmath>

#include "base/json_escape.h"
#include "chat/jinja_error.h"
#include "chat/jinja_format.h"
#include "chat/jinja_ops.h"

namespace anelm::jinja {

Value from_json(const nlohmann::ordered_json& j) {
    using Type = nlohmann::ordered_json::value_t;
    switch (j.type()) {
        case Type::null:
            return Value::none();
        case Type::boolean:
            return Value::boolean(j.get<bool>());
        case Type::number_integer:
            return Value::integer(j.get<int64_t>());
        case Type::number_unsigned: {
            const auto u = j.get<uint64_t>();
            if (u > static_cast<uint64_t>(INT64_MAX)) return Value::number(static_cast<double>(u));
            return Value::integer(static_cast<int64_t>(u));
        }
        case Type::number_float:
            return Value::number(j.get<double>());
        case Type::string:
            return Value::string(j.get<std::string>());
        case Type::array: {
            std::vector<Value> items;
            items.reserve(j.size());
            for (const auto& item : j) items.push_back(from_json(item));
            return Value::list(std::move(items));
        }
        case Type::object: {
            Dict d;
            d.entries.reserve(j.size());
            for (const auto& [k, v] : j.items())
                d.entries.emplace_back(Value::string(k), from_json(v));
            return Value::dict(std::move(d));
        }
        default:
            return Value::none();
    }
}

static std::string json_float(double d) {
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
    return float_repr(d);
}

static std::string json_key(const Value& k) {
    switch (k.kind()) {
        case Kind::string:
            return k.as_string();
        case Kind::none:
            return "null";
        case Kind::boolean:
            return k.as_bool() ? "true" : "false";
        case Kind::integer:
            return std::to_string(k.as_int());
        case Kind::floating:
            return json_float(k.as_float());
        default:
            raise("keys must be str, int, float, bool or None, not {}", type_name(k));
    }
}

namespace {

struct JsonWriter {
    const JsonOptions& options;
    std::string out;

    void newline(int depth) {
        out += '\n';
        for (int i = 0; i < depth; ++i) out += *options.indent;
    }

    // Opens a container's next element: the separator, then the indentation.
    void element(bool first, int depth) {
        if (!first) out += options.item_separator;
        if (options.indent) newline(depth);
    }

    void write(const Value& v, int depth) {
        if (depth > 256) raise("JSON nesting too deep");
        switch (v.kind()) {
            case Kind::none:
                out += "null";
                return;
            case Kind::boolean:
                out += v.as_bool() ? "true" : "false";
                return;
            case Kind::integer:
                out += std::to_string(v.as_int());
                return;
            case Kind::floating:
                out += json_float(v.as_float());
                return;
            case Kind::string:
                append_json_string(out, v.as_string(), options.ensure_ascii);
                return;
            case Kind::array: {
                const auto& items = v.as_array().items;
                if (items.empty()) {
                    out += "[]";
                    return;
                }
                out += '[';
                for (size_t i = 0; i < items.size(); ++i) {
                    element(i == 0, depth + 1);
                    write(items[i], depth + 1);
                }
                if (options.indent) newline(depth);
                out += ']';
                return;
            }
            case Kind::dict: {
                std::vector<const std::pair<Value, Value>*> entries;
                for (const auto& e : v.as_dict().entries) entries.push_back(&e);
                if (entries.empty()) {
                    out += "{}";
                    return;
                }
                if (options.sort_keys)
                    std::stable_sort(entries.begin(), entries.end(),
                                     [](auto* a, auto* b) { return less(a->first, b->first); });
                out += '{';
                for (size_t i = 0; i < entries.size(); ++i) {
                    element(i == 0, depth + 1);
                    append_json_string(out, json_key(entries[i]->first), options.ensure_ascii);
                    out += options.key_separator;
                    write(entries[i]->second, depth + 1);
                }
                if (options.indent) newline(depth);
                out += '}';
                return;
            }
            default:
                raise("Object of type {} is not JSON serializable", type_name(v));
        }
    }
};

}  // namespace

std::string to_json(const Value& v, const JsonOptions& options) {
    JsonWriter writer{options, {}};
    writer.write(v, 0);
    return std::move(writer.out);
}

}  // namespace anelm::jinja
