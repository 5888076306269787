// A JSON Schema compiled for constrained decoding: the values a Matcher lets
// through, as a graph of nodes. Immutable once built, so one Grammar may serve
// many Matchers on many threads.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace anelm::grammar {

inline constexpr uint32_t unbounded = std::numeric_limits<uint32_t>::max();

enum class Kind : uint8_t { object, array, string, number, integer, literals, any_of };

struct Property {
    std::string key;  // the name as JSON text, quotes included
    int32_t value = -1;
    bool required = false;
};

struct Node {
    Kind kind = Kind::any_of;
    // object: properties in schema order, emitted in that order. Without
    // properties any key may come, with values of node extra (-1: none, "{}" only).
    std::vector<Property> properties;
    std::vector<uint32_t> first_required;  // [i]: first required property >= i, or size
    int32_t extra = -1;
    // array
    int32_t items = -1;
    uint32_t min_items = 0, max_items = unbounded;
    // string: lengths in characters (a surrogate pair is one)
    uint32_t min_length = 0, max_length = unbounded;
    // literals: sorted JSON texts (enum, const, true, false, null). For an
    // object, its keys sorted, with key_props the property of each.
    std::vector<std::string> literals;
    std::vector<uint32_t> key_props;
    // any_of: the alternatives, none of them any_of
    std::vector<int32_t> options;
};

class Grammar {
public:
    // From a JSON Schema, parsed as ordered_json so that properties keep the order
    // the request gave them (they are generated in that order). where names the
    // schema in errors, e.g. "response_format.json_schema.schema". Throws Error naming
    // the path of an unsupported or invalid keyword.
    static Grammar from_json_schema(const nlohmann::ordered_json& schema, const std::string& where);
    // Any JSON object: response_format {"type": "json_object"}.
    static Grammar any_object();

    const Node& node(int32_t id) const { return data_->nodes[id]; }
    int32_t root() const { return data_->root; }
    int32_t plain_string() const { return data_->plain_string; }  // keys of free objects

    struct Data {
        std::vector<Node> nodes;
        int32_t root = -1;
        int32_t plain_string = -1;
    };
    explicit Grammar(std::shared_ptr<const Data> data) : data_(std::move(data)) {}

private:
    std::shared_ptr<const Data> data_;
};

}  // namespace anelm::grammar
