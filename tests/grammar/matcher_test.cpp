// The matcher byte by byte: documents a schema allows are taken whole, others are
// refused at the first byte that cannot continue them; bad schemas name their path.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/error.h"
#include "grammar_fixtures.h"

namespace anelm::test {
namespace {

using grammar::Grammar;
using grammar::Matcher;

Grammar schema(const std::string& text) {
    return Grammar::from_json_schema(ojson::parse(text), "schema");
}

// The offset of the first byte the matcher refuses, or npos.
size_t refused_at(const Grammar& g, std::string_view text) {
    Matcher m(g);
    for (size_t i = 0; i < text.size(); ++i)
        if (!m.advance(text.substr(i, 1))) return i;
    return std::string_view::npos;
}

void expect_document(const Grammar& g, std::string_view text, bool closed = true) {
    Matcher whole(g);
    ASSERT_TRUE(whole.advance(text)) << text << " refused at " << refused_at(g, text);
    EXPECT_TRUE(whole.accepts_end()) << text;
    EXPECT_EQ(whole.finished(), closed) << text;
    for (size_t cut = 0; cut < text.size(); ++cut) {
        Matcher part(g);
        ASSERT_TRUE(part.advance(text.substr(0, cut)));
        ASSERT_TRUE(part.advance(text.substr(cut))) << text << " cut at " << cut;
    }
}

void expect_refused(const Grammar& g, std::string_view text, size_t at) {
    EXPECT_EQ(refused_at(g, text), at) << text;
    Matcher m(g);
    EXPECT_FALSE(m.advance(text));
    // A refused advance leaves the state as it was.
    EXPECT_TRUE(m.advance(text.substr(0, at))) << text;
}

const char* person = test_schemas()[0].text;

TEST(GrammarMatcher, TakesValidPeople) {
    const Grammar g = schema(person);
    expect_document(g, R"({"name":"Ann","age":30})");
    expect_document(
        g, "{\"name\": \"Zo\xC3\xAB\", \"age\": -1, \"tags\": [\"a\", \"b\\\"c\\u00e9\"]}");
    expect_document(g, R"({"name":"x","age":0,"email":"a@b","tags":[]})");
    expect_document(g, R"({"name":"\ud83d\ude00 \/\b\f\n\r\t","age":123456789012345678})");
    expect_document(g, "{\"name\":\"\xF0\x9F\x99\x82\xE6\x97\xA5\",\"age\":7,\"email\":\"\"}");
}

TEST(GrammarMatcher, RefusesAtTheRightByte) {
    const Grammar g = schema(person);
    expect_refused(g, R"({"age":30})", 2);                 // name is required first
    expect_refused(g, R"({"name":"","age":1})", 9);        // minLength 1
    expect_refused(g, R"({"name":"Ann","age":3.5})", 21);  // integer
    expect_refused(g, R"({"name":"Ann" ,"age":1})", 13);   // no space before ','
    expect_refused(g, R"({"name":  "Ann"})", 9);           // one space at most
    expect_refused(g, R"({"name":"Ann","age":01})", 21);   // no leading zero
    expect_refused(g, R"({"name":"Ann","age":1,"tags":["a","b","c","d"]})", 41);  // maxItems
    expect_refused(g, "{\"name\":\"a\nb\"", 10);                 // raw control character
    expect_refused(g, "{\"name\":\"\xC3\x28\"", 10);             // invalid UTF-8
    expect_refused(g, "{\"name\":\"\xED\xA0\x80\"", 10);         // encoded surrogate
    expect_refused(g, R"({"name":"\udc00"})", 12);               // lone low surrogate
    expect_refused(g, R"({"name":"\ud83dx"})", 15);              // high surrogate alone
    expect_refused(g, R"({"name":"\x"})", 10);                   // unknown escape
    expect_refused(g, R"({"name":"Ann","age":1}x)", 22);         // nothing after the end
    expect_refused(g, R"({"name":"Ann","age":1,"age":2})", 23);  // no repeats
    expect_refused(g, R"({"name":"Ann","age":1,"other":2})", 23);
    expect_refused(g, R"({"name":"123456789012345678901"})", 29);  // maxLength 20
    expect_refused(g, R"( {"name":"Ann","age":1})", 0);
    Matcher open(g);
    EXPECT_TRUE(open.advance(R"({"name":"Ann")"));
    EXPECT_FALSE(open.accepts_end());
    EXPECT_FALSE(open.finished());
}

TEST(GrammarMatcher, EnumsConstsAndUnions) {
    const Grammar g = schema(test_schemas()[1].text);
    expect_document(g, R"({"color":12,"kind":"fixed","ok":true})");
    expect_document(g, R"({"color":1, "kind": "fixed", "ok": false})");
    expect_document(g, R"({"color":null,"kind":"fixed","ok":true})");
    expect_document(g, R"({"color":{"x":[1]},"kind":"fixed","ok":true})");
    expect_refused(g, R"({"color":123)", 11);
    expect_refused(g, R"({"color":"re")", 12);
    expect_refused(g, R"({"color":"red","kind":"fixed2")", 28);
    expect_refused(g, R"({"color":"red","kind":"fixed","ok":tru})", 38);
    const Grammar u = schema(test_schemas()[2].text);
    expect_document(u, R"({"v":null,"w":-0.5e+12})");
    expect_document(u, R"({"v":"n","w":[1, -2]})");
    expect_refused(u, R"({"v":"n","w":[1,2,3]})", 17);
    expect_refused(u, R"({"v":"n","w":[1.5]})", 15);
    expect_refused(u, R"({"v":"n","w":1e123})", 17);
    expect_refused(u, R"({"v":nul,"w":1})", 8);
}

TEST(GrammarMatcher, RecursionDefinitionsAndFreeObjects) {
    const Grammar tree = schema(test_schemas()[3].text);
    expect_document(tree, R"({"value":1,"children":[{"value":2},{"value":3,"children":[]}]})");
    expect_refused(tree, R"({"value":1,"children":[{"value":2},{"value":3},{)", 46);
    const Grammar any = Grammar::any_object();
    expect_document(any, R"({"a":[1,{"b":null},"c",true,false,2.5],"a":{}})");
    expect_document(any, R"({})");
    expect_refused(any, R"([1])", 0);
    const Grammar dict = schema(test_schemas()[8].text);
    expect_document(dict, R"({"x":1, "y":-2})");
    expect_refused(dict, R"({"x":"1"})", 5);
    const Grammar closed = schema(R"({"type":"object","additionalProperties":false})");
    expect_document(closed, "{}");
    expect_refused(closed, R"({"a":1})", 1);
}

TEST(GrammarMatcher, RootScalarsEndLazily) {
    const Grammar number = schema(R"({"type":"number"})");
    expect_document(number, "12.5e+1", false);
    expect_document(number, "-0", false);
    expect_document(number, "1e99", true);
    expect_refused(number, "1e123", 4);
    Matcher dot(number);
    EXPECT_TRUE(dot.advance("1."));
    EXPECT_FALSE(dot.accepts_end());
    const Grammar lits = schema(R"({"enum":[1,12,"a"]})");
    expect_document(lits, "1", false);
    expect_document(lits, "12", true);
    expect_document(lits, "\"a\"", true);
    const Grammar string = schema(R"({"type":"string","maxLength":2})");
    expect_document(string, "\"\\ud83d\\ude00\xC3\xA9\"", true);  // a surrogate pair is one
    expect_refused(string, "\"abc\"", 3);
}

TEST(GrammarMatcher, OptionalPropertiesInOrder) {
    const Grammar g = schema(test_schemas()[10].text);
    expect_document(g, "{}");
    expect_document(g, R"({"c":true})");
    expect_document(g, R"({"a":1,"d":["x","xy","x"]})");
    expect_refused(g, R"({"c":true,"a":1})", 11);  // schema order
    expect_refused(g, R"({"d":["x","xy"]})", 14);  // minItems 3
    expect_refused(g, R"({"a":1,})", 7);
}

std::string compile_error(const std::string& text) {
    try {
        schema(text);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(GrammarSchema, ErrorsNameThePath) {
    EXPECT_EQ(
        compile_error(R"({"type":"object","properties":{"age":{"type":"integer","minimum":0}}})"),
        "schema.properties.age: unsupported keyword \"minimum\"");
    EXPECT_EQ(compile_error(R"({"properties":{"a":{"items":{"type":"string","pattern":"x"}}}})"),
              "schema.properties.a.items: unsupported keyword \"pattern\"");
    EXPECT_EQ(compile_error(R"({"anyOf":[{"type":"string"},{"patternProperties":{}}]})"),
              "schema.anyOf[1]: unsupported keyword \"patternProperties\"");
    EXPECT_EQ(compile_error(R"({"$ref":"#/$defs/missing"})"),
              "schema.$ref: \"#/$defs/missing\" is not in this schema");
    EXPECT_EQ(compile_error(R"({"$defs":{"a":{"type":"date"}},"$ref":"#/$defs/a"})"),
              "schema.$defs.a.type: unknown type \"date\"");
    EXPECT_EQ(compile_error(R"({"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})"),
              "schema: the schema refers only to itself");
    EXPECT_EQ(compile_error(R"({"properties":{"a":{}},"required":["b"]})"),
              "schema.required: \"b\" is not in properties");
    EXPECT_EQ(compile_error(R"({"type":"array","items":[{"type":"string"}]})"),
              "schema.items: the array (tuple) form is not supported");
    EXPECT_EQ(compile_error(R"({"type":"string","minLength":3,"maxLength":2})"),
              "schema: minLength is above maxLength");
    EXPECT_EQ(compile_error(R"({"type":"string","enum":[1,2]})"),
              "schema: enum/const leaves no value");
    EXPECT_EQ(compile_error(R"({"properties":{"a":false}})"),
              "schema.properties.a: schema false matches nothing");
    EXPECT_EQ(compile_error(R"({"allOf":[{"type":"string"},{"maxLength":2}]})"),
              "schema.allOf: only a single schema with nothing beside it is supported");
    EXPECT_EQ(compile_error(R"({"type":"array","items":{"$ref":"http://x/y"}})"),
              "schema.items.$ref: \"http://x/y\" is not a reference into this schema");
}

TEST(GrammarSchema, NestingAndReferenceChainsHaveACeiling) {
    std::string nested = R"({"type":"string"})";
    for (int i = 0; i < 70; ++i) nested = R"({"type":"array","items":)" + nested + "}";
    EXPECT_NE(compile_error(nested).find("the schema nests more than 64 levels deep"),
              std::string::npos);
    // A flat document whose references chain a -> b -> c ...
    std::string defs;
    for (int i = 0; i < 100; ++i)
        defs += fmt::format(R"({}"d{}":{{"$ref":"#/$defs/d{}"}})", i ? "," : "", i, i + 1);
    defs += R"(,"d100":{"type":"string"})";
    EXPECT_NE(compile_error(R"({"$defs":{)" + defs + R"(},"$ref":"#/$defs/d0"})")
                  .find("references included"),
              std::string::npos);
}

TEST(GrammarSchema, AnnotationsAreIgnored) {
    const Grammar g = schema(R"({"title":"T","description":"d","type":"string","format":"date",
                                 "default":"x","examples":["y"],"$schema":"s"})");
    expect_document(g, "\"not a date\"");
    const Grammar one = schema(R"({"allOf":[{"type":"integer"}],"description":"d"})");
    expect_document(one, "42", false);
}

}  // namespace
}  // namespace anelm::test
