// Filters and tests, including transformers' tojson (json.dumps with
// ensure_ascii=False and Python's separators).
#include "jinja_test_util.h"

namespace anelm::jinja::test {
namespace {

TEST(JinjaFilters, TojsonUsesPythonSeparatorsAndKeepsUnicode) {
    const ojson d = ojson::parse(R"({"b": [1, 2.5, null, true, "\u00e9\"\n\t\u2028"], "a": {}})");
    EXPECT_EQ(render("{{ d | tojson }}", {{"d", d}}),
              "{\"b\": [1, 2.5, null, true, \"\u00e9\\\"\\n\\t\u2028\"], \"a\": {}}");
    EXPECT_EQ(render("{{ d | tojson(sort_keys=true) }}", {{"d", {{"b", 1}, {"a", 2}}}}),
              "{\"a\": 2, \"b\": 1}");
    EXPECT_EQ(
        render("{{ '\u00e9' | tojson(ensure_ascii=true) }} {{ 1.0 | tojson }} {{ 1e20 | tojson }}"),
        "\"\\u00e9\" 1.0 1e+20");
    EXPECT_EQ(render("{{ [1, 2] | tojson(separators=(',', ':')) }}"), "[1,2]");
}

TEST(JinjaFilters, TojsonIndentLaysOutLikeJsonDumps) {
    EXPECT_EQ(render("{{ {'a': 1, 'b': [1, {}], 'c': []} | tojson(indent=2) }}"),
              "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    {}\n  ],\n  \"c\": []\n}");
    EXPECT_EQ(render("{{ [1] | tojson(indent='\\t') }}"), "[\n\t1\n]");
    EXPECT_NE(render_error("{{ missing | tojson }}")
                  .find("Object of type Undefined is not JSON serializable"),
              std::string::npos);
}

TEST(JinjaFilters, StringFilters) {
    EXPECT_EQ(render("[{{ '  a \\n' | trim }}][{{ 'xxa' | trim('x') }}]"), "[a][a]");
    EXPECT_EQ(render("{{ 'hello wORLD' | title }} {{ 'hELLO' | capitalize }} {{ 'a' | upper }}{{ "
                     "'B' | lower }}"),
              "Hello World Hello Ab");
    EXPECT_EQ(render("{{ 'aXbX' | replace('X', '-') }} {{ 'aXbX' | replace('X', '-', 1) }}"),
              "a-b- a-bX");
    EXPECT_EQ(render("{{ 'abc def' | truncate(5) }} {{ 'abcdefghijklmnop' | truncate(9, true) }}"),
              "abc def abcdef...");
    EXPECT_EQ(render("{{ 'a\\nb' | indent(2, true) }}|{{ 'a b c' | wordcount }}|{{ '<a>' | e }}"),
              "  a\n  b|3|&lt;a&gt;");
    EXPECT_EQ(render("{{ '%s and %s' | format(1, 2) }} {{ 'hi' | center(6) }}|"),
              "1 and 2   hi  |");
}

TEST(JinjaFilters, SequenceFilters) {
    EXPECT_EQ(render("{{ [3, 1, 2] | sort }}{{ [3, 1, 2] | sort(reverse=true) }}{{ ['b', 'A', 'a'] "
                     "| sort }}"),
              "[1, 2, 3][3, 2, 1]['A', 'a', 'b']");
    EXPECT_EQ(render("{{ [1, 2, 3] | first }}{{ [1, 2, 3] | last }}{{ [1, 2, 3] | join(', ') }}{{ "
                     "[1, 2] | sum }}"),
              "131, 2, 33");
    EXPECT_EQ(
        render(
            "{{ [1, 2, 2, 1] | unique | list }}{{ 'ab' | list }}{{ [1, 2, 3] | reverse | list }}"),
        "[1, 2]['a', 'b'][3, 2, 1]");
    EXPECT_EQ(
        render("{{ [1, 2, 3, 4, 5] | batch(2) | list }}{{ [1, 2, 3] | max }}{{ [] | first }}"),
        "[[1, 2], [3, 4], [5]]3");
    EXPECT_EQ(render("{{ {'b': 2, 'a': 1} | dictsort }}"), "[('a', 1), ('b', 2)]");
}

TEST(JinjaFilters, MapSelectAndAttributes) {
    const ojson items = ojson::parse(R"([{"n": "b", "v": 0}, {"n": "a", "v": 2}])");
    EXPECT_EQ(render("{{ items | map(attribute='n') | join }}", {{"items", items}}), "ba");
    EXPECT_EQ(
        render("{{ items | selectattr('v') | map(attribute='n') | list }}", {{"items", items}}),
        "['a']");
    EXPECT_EQ(render("{{ items | rejectattr('v', 'equalto', 2) | map(attribute='n') | list }}",
                     {{"items", items}}),
              "['b']");
    EXPECT_EQ(
        render("{{ items | sort(attribute='n') | map(attribute='v') | list }}", {{"items", items}}),
        "[2, 0]");
    EXPECT_EQ(render("{{ [1, 2, 3, 4] | select('odd') | list }}{{ ['a', 'b'] | reject('equalto', "
                     "'b') | list }}"),
              "[1, 3]['a']");
    EXPECT_EQ(render("{{ [1, 2] | map('string') | list }}{{ [{'a': 1}, {}] | map(attribute='a', "
                     "default=0) | list }}"),
              "['1', '2'][1, 0]");
}

TEST(JinjaFilters, LazyFiltersReturnOneShotGenerators) {
    // As in Python: always true, no len(), consumed by one pass.
    EXPECT_EQ(render("{{ 'yes' if [] | select else 'no' }}"), "yes");
    EXPECT_EQ(render("{% set g = [1, 2] | map('string') %}{{ g | list }}{{ g | list }}"),
              "['1', '2'][]");
    EXPECT_NE(render_error("{{ [1] | map('string') | length }}")
                  .find("object of type 'generator' has no len()"),
              std::string::npos);
}

TEST(JinjaFilters, ConversionsAndDefaults) {
    EXPECT_EQ(render("{{ '42' | int }} {{ '4.9' | int }} {{ 'x' | int(7) }} {{ 3.7 | int }} {{ "
                     "'0x1f' | int(0, 16) }}"),
              "42 4 7 3 31");
    EXPECT_EQ(render("{{ '3.5' | float }} {{ 'x' | float }} {{ 2.5 | round }} {{ 3.5 | round }} {{ "
                     "2.1 | round(method='ceil') }}"),
              "3.5 0.0 2.0 4.0 3.0");
    EXPECT_EQ(
        render(
            "{{ missing | default('d') }} {{ none | default('d') }} {{ '' | default('d', true) }}"),
        "d None d");
    EXPECT_EQ(render("{{ 1 | string }}{{ [1] | string }}{{ -3 | abs }}"), "1[1]3");
}

TEST(JinjaTests, BuiltInTests) {
    EXPECT_EQ(render("{{ 'a' is string }}{{ {} is mapping }}{{ [] is mapping }}{{ 'a' is iterable "
                     "}}{{ 1 is iterable }}"),
              "TrueTrueFalseTrueFalse");
    EXPECT_EQ(render("{{ 1 is number }}{{ true is number }}{{ 1 is integer }}{{ 1.0 is float }}{{ "
                     "true is boolean }}"),
              "TrueTrueTrueTrueTrue");
    EXPECT_EQ(render("{{ false is false }}{{ 0 is false }}{{ none is none }}{{ x is none }}{{ 3 is "
                     "divisibleby 3 }}"),
              "TrueFalseTrueFalseTrue");
    EXPECT_EQ(render("{{ 4 is even }}{{ 3 is odd }}{{ 3 is in [1, 3] }}{{ 'A' is upper }}{{ 1 is "
                     "eq 1 }}{{ 2 is gt 1 }}"),
              "TrueTrueTrueTrueTrueTrue");
    EXPECT_EQ(render("{{ x is not defined }}{{ range is callable }}{{ 'trim' is filter }}{{ 'odd' "
                     "is test }}"),
              "TrueTrueTrueTrue");
}

}  // namespace
}  // namespace anelm::jinja::test
