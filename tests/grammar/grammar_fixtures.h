// Shared by the grammar tests: the schemas, a small byte-level vocabulary, the
// Qwen3 tokenizer from ../shared, random constrained generation, and a small JSON
// Schema validator of its own to check what was generated.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "grammar/piece_tokenizer.h"
#include "grammar/token_filter.h"
#include "test_support.h"

namespace anelm::test {

using ojson = nlohmann::ordered_json;

struct NamedSchema {
    const char* name;
    const char* text;  // a JSON Schema; empty for json_object mode
};

inline const std::vector<NamedSchema>& test_schemas() {
    static const std::vector<NamedSchema> schemas = {
        {"person", R"({"type":"object","properties":{
            "name":{"type":"string","minLength":1,"maxLength":20},"age":{"type":"integer"},
            "email":{"type":"string","format":"email"},
            "tags":{"type":"array","items":{"type":"string"},"maxItems":3}},
            "required":["name","age"],"additionalProperties":false})"},
        {"enums", R"({"type":"object","properties":{
            "color":{"enum":["red","green","blue",1,12,null,{"x":[1]}]},
            "kind":{"const":"fixed"},"ok":{"type":"boolean"}},
            "required":["color","kind","ok"]})"},
        {"unions", R"({"type":"object","properties":{
            "v":{"type":["string","null"]},
            "w":{"anyOf":[{"type":"number"},
                          {"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":2}]}},
            "required":["v","w"]})"},
        {"tree", R"({"$defs":{"node":{"type":"object","properties":{
            "value":{"type":"integer"},
            "children":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":2}},
            "required":["value"]}},"$ref":"#/$defs/node"})"},
        {"rows", R"({"type":"array","minItems":2,"maxItems":4,"items":{"type":"object",
            "properties":{"id":{"type":"integer"},"score":{"type":"number"}},
            "required":["id","score"]}})"},
        {"json_object", ""},
        {"short_strings", R"({"type":"object","properties":{
            "s":{"type":"string","minLength":2,"maxLength":4},
            "u":{"type":"string","maxLength":1}},"required":["s","u"]})"},
        {"one_of", R"({"oneOf":[
            {"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],
             "additionalProperties":false},
            {"type":"object","properties":{"b":{"type":"string"}},"required":["b"],
             "additionalProperties":false}]})"},
        {"dictionary", R"({"type":"object","additionalProperties":{"type":"integer"}})"},
        {"pydantic", R"({"definitions":{"Pet":{"title":"Pet","type":"object","properties":{
            "kind":{"title":"Kind","enum":["cat","dog"]},"name":{"type":"string"}},
            "required":["kind","name"]}},"title":"Owner","type":"object","properties":{
            "pets":{"type":"array","items":{"$ref":"#/definitions/Pet"}},
            "owner":{"type":"string","description":"who","default":"me"},
            "note":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null}},
            "required":["pets"]})"},
        {"optional_only", R"({"type":"object","properties":{
            "a":{"type":"number"},"b":{"type":"null"},"c":{"type":"boolean"},
            "d":{"type":"array","items":{"enum":["x","xy"]},"minItems":3}}})"},
    };
    return schemas;
}

inline grammar::Grammar compile(const NamedSchema& s) {
    if (std::string(s.text).empty()) return grammar::Grammar::any_object();
    return grammar::Grammar::from_json_schema(ojson::parse(s.text), "schema");
}

// Every byte, and pieces of JSON, words, escapes and characters whole and in parts.
inline const PieceTokenizer& small_tokenizer() {
    static const PieceTokenizer tok([] {
        std::vector<std::string> pieces;
        for (int b = 0; b < 256; ++b) pieces.emplace_back(1, static_cast<char>(b));
        for (const char* p : {"{\"",      "\":",
                              "\": ",     "\",",
                              "\", \"",   "\"}",
                              "\"]",      "},",
                              "}]",       "[{",
                              "[\"",      "\":\"",
                              ", ",       ": ",
                              "null",     "true",
                              "false",    "12",
                              "3.5",      "e+",
                              "-0",       "00",
                              "name",     "age",
                              "tags",     "color",
                              "kind",     "fixed",
                              "red",      "green",
                              "blue",     "value",
                              "children", "\"children\":[",
                              "id",       "score",
                              "pets",     "cat",
                              "dog",      " the",
                              "hello",    "\\\"",
                              "\\\\",     "\\n",
                              "\\u00",    "\\ud83d",
                              "\\ude00",  "\\u",
                              "\xC3\xA9", "\xE6\x97\xA5\xE6\x9C\xAC",
                              "\xE6\x97", "\xF0\x9F\x99\x82",
                              "\xF0\x9F", "\x99\x82",
                              "\"x\"",    "xy\"",
                              "\"\"",     "{}",
                              "[]",       "\"s\":\""})
            pieces.emplace_back(p);
        return pieces;
    }());
    return tok;
}

inline bool have_qwen() {
    return std::filesystem::exists(shared_path("tokenizers/qwen3/tokenizer.json"));
}

inline const Tokenizer& qwen_tokenizer() {
    static const auto tok = load_tokenizer(shared_path("tokenizers/qwen3/tokenizer.json").string());
    return *tok;
}

inline bool has(const std::vector<uint32_t>& bits, int32_t id) {
    return bits[id >> 5] >> (id & 31) & 1;
}

// Picks allowed tokens at random until a stop id is picked. Past a soft budget it
// prefers tokens that close things, so that every run ends. Returns the text, and
// each state on the way through states when given.
inline std::string generate(const grammar::TokenFilter& filter, const grammar::Grammar& g,
                            const std::vector<int32_t>& stop_ids, uint32_t seed,
                            std::vector<grammar::Matcher>* states = nullptr) {
    static const std::vector<std::string> closers = {"\"", "}", "]", "0", "null", "true"};
    std::mt19937 rng(seed);
    grammar::Matcher m(g);
    std::string text;
    std::vector<uint32_t> bits;
    for (int step = 0; step < 3000; ++step) {
        if (states) states->push_back(m);
        filter.allowed(m, bits);
        std::vector<int32_t> ids, preferred;
        for (int32_t id = 0; id < filter.n_vocab(); ++id) {
            if (!has(bits, id)) continue;
            ids.push_back(id);
            const bool stop = std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end();
            if (stop ||
                std::find(closers.begin(), closers.end(), filter.token_bytes(id)) != closers.end())
                preferred.push_back(id);
        }
        if (ids.empty()) {
            ADD_FAILURE() << "no token allowed after " << text;
            return text;
        }
        const bool finish = step > 40 + static_cast<int>(seed % 40) && !preferred.empty();
        const auto& pool = finish ? preferred : ids;
        const int32_t id = pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng)];
        if (std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end()) {
            EXPECT_TRUE(m.accepts_end()) << text;
            return text;
        }
        EXPECT_TRUE(filter.advance(m, id)) << text;
        text += filter.token_bytes(id);
    }
    ADD_FAILURE() << "no end after 3000 tokens: " << text;
    return text;
}

// Checks value against schema (resolving $ref in root): types, properties,
// required, additionalProperties, items and their counts, enum, const, string
// lengths in code points, anyOf, oneOf. Returns what is wrong, or "".
inline std::string validate(const ojson& value, const ojson& schema, const ojson& root,
                            const std::string& at = "$") {
    if (schema.is_boolean()) return schema.get<bool>() ? "" : at + ": false schema";
    if (schema.contains("$ref")) {
        const std::string ref = schema["$ref"];
        return validate(value, root.at(ojson::json_pointer(ref.substr(1))), root, at);
    }
    if (schema.contains("const") && value != schema["const"]) return at + ": not the const";
    if (schema.contains("enum")) {
        const auto& e = schema["enum"];
        if (std::find(e.begin(), e.end(), value) == e.end()) return at + ": not in enum";
    }
    if (schema.contains("anyOf")) {
        bool any = false;
        for (const auto& s : schema["anyOf"]) any = any || validate(value, s, root, at).empty();
        if (!any) return at + ": matches no anyOf";
    }
    if (schema.contains("oneOf")) {
        int n = 0;
        for (const auto& s : schema["oneOf"]) n += validate(value, s, root, at).empty();
        if (n != 1) return at + ": matches " + std::to_string(n) + " of oneOf";
    }
    if (schema.contains("type")) {
        const ojson types =
            schema["type"].is_array() ? schema["type"] : ojson::array({schema["type"]});
        bool ok = false;
        for (const auto& t : types) {
            const std::string n = t;
            ok = ok || (n == "object" && value.is_object()) || (n == "array" && value.is_array()) ||
                 (n == "string" && value.is_string()) || (n == "number" && value.is_number()) ||
                 (n == "integer" && (value.is_number_integer() ||
                                     (value.is_number_float() &&
                                      std::floor(value.get<double>()) == value.get<double>()))) ||
                 (n == "boolean" && value.is_boolean()) || (n == "null" && value.is_null());
        }
        if (!ok) return at + ": wrong type " + value.dump();
    }
    if (value.is_object()) {
        const ojson props = schema.value("properties", ojson::object());
        for (const auto& name : schema.value("required", ojson::array()))
            if (!value.contains(name.get<std::string>())) return at + ": lacks " + name.dump();
        for (const auto& [key, v] : value.items()) {
            std::string why;
            if (props.contains(key))
                why = validate(v, props[key], root, at + "." + key);
            else if (schema.contains("additionalProperties"))
                why = validate(v, schema["additionalProperties"], root, at + "." + key);
            if (!why.empty()) return why;
        }
    }
    if (value.is_array()) {
        if (value.size() < schema.value("minItems", 0u)) return at + ": too few items";
        if (value.size() > schema.value("maxItems", 1u << 30)) return at + ": too many items";
        if (schema.contains("items"))
            for (size_t i = 0; i < value.size(); ++i) {
                const std::string why =
                    validate(value[i], schema["items"], root, at + "[" + std::to_string(i) + "]");
                if (!why.empty()) return why;
            }
    }
    if (value.is_string()) {
        const std::string& s = value.get_ref<const std::string&>();
        size_t n = 0;
        for (char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
        if (n < schema.value("minLength", 0u)) return at + ": too short";
        if (n > schema.value("maxLength", 1u << 30)) return at + ": too long";
    }
    return "";
}

}  // namespace anelm::test
