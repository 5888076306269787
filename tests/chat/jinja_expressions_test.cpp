// Expressions with Python's semantics, as Jinja2 evaluates them.
#include "jinja_test_util.h"

namespace anelm::jinja::test {
namespace {

TEST(JinjaExpressions, ValuesPrintAsPythonStr) {
    EXPECT_EQ(render("{{ none }}|{{ true }}|{{ False }}|{{ 1 }}|{{ -2 }}"), "None|True|False|1|-2");
    EXPECT_EQ(render("{{ 1.0 }}|{{ 0.1 }}|{{ 1e16 }}|{{ 1e15 }}|{{ 1.5e-7 }}|{{ 0.0001 }}"),
              "1.0|0.1|1e+16|1000000000000000.0|1.5e-07|0.0001");
    EXPECT_EQ(render("{{ [1, 'a', none, true] }}"), "[1, 'a', None, True]");
    EXPECT_EQ(render("{{ (1,) }}{{ () }}{{ {'a': [1, 2.5]} }}"), "(1,)(){'a': [1, 2.5]}");
    EXPECT_EQ(render("{{ [\"it's\", 'a\\nb', 'q\"'] }}"), "[\"it's\", 'a\\nb', 'q\"']");
    EXPECT_EQ(render("{{ x }}", {{"x", {{"k", nullptr}}}}), "{'k': None}");
}

TEST(JinjaExpressions, FloatsPrintAsPythonRepr) {
    EXPECT_EQ(
        render("{{ 0.1 + 0.2 }}|{{ 1e-5 }}|{{ -0.0 }}|{{ 123456789012345678.0 }}|{{ 5e-324 }}"),
        "0.30000000000000004|1e-05|-0.0|1.2345678901234568e+17|5e-324");
    EXPECT_EQ(render("{{ 1.7976931348623157e308 }}|{{ 100.0 }}|{{ 2.5e15 }}"),
              "1.7976931348623157e+308|100.0|2500000000000000.0");
}

TEST(JinjaExpressions, StringLiteralsUsePythonEscapes) {
    EXPECT_EQ(render("{{ 'tab\\there' }}"), "tab\there");
    EXPECT_EQ(render("{{ '\\x41\\u00e9\\U0001F600' }}"), "A\u00e9\U0001F600");
    EXPECT_EQ(render("{{ '\\d' }}"), "\\d");          // unknown escapes stay
    EXPECT_EQ(render("{{ 'a' 'b' \"c\" }}"), "abc");  // adjacent literals join
}

TEST(JinjaExpressions, ArithmeticFollowsPython) {
    EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }}"),
              "7 9 64 4");
    EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ -7.5 % 2 }}"),
              "3 -4 1 2 0.5");
    EXPECT_EQ(render("{{ 10 / 4 }} {{ 4 / 2 }} {{ 2 ** -1 }} {{ true + 1 }}"), "2.5 2.0 0.5 2");
    EXPECT_EQ(render("{{ 'ab' * 3 }} {{ [0] * 2 }} {{ 'x' * -1 }}|"), "ababab [0, 0] |");
    EXPECT_EQ(render("{{ 'a' ~ 1 ~ none }} {{ [1] + [2] }}"), "a1None [1, 2]");
}

TEST(JinjaExpressions, ComparisonsAndMembership) {
    EXPECT_EQ(
        render("{{ 1 == 1.0 }} {{ 1 == true }} {{ (1,) == [1] }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}"),
        "True True False True False");
    EXPECT_EQ(
        render("{{ 'a' in 'cat' }} {{ 'z' not in 'cat' }} {{ 1 in [1, 2] }} {{ 'a' in {'a': 1} }}"),
        "True True True True");
    EXPECT_EQ(render("{{ [1, 2] < [1, 3] }} {{ 'a' < 'b' }}"), "True True");
}

TEST(JinjaExpressions, LogicReturnsOperandsAndFiltersBindTighter) {
    EXPECT_EQ(render("{{ none or 'x' }} {{ 0 and 1 }} {{ 1 and 2 }} {{ '' or [] }}"), "x 0 2 []");
    EXPECT_EQ(render("{{ 'a' + ' b ' | trim + 'c' }}"), "abc");
    EXPECT_EQ(render("{{ [1, 2, 3] | length - 1 }}"), "2");
    // `is` binds tighter than `not`.
    EXPECT_EQ(render("{{ not x is defined }} {{ not none is none }}"), "True False");
    EXPECT_EQ(render("{{ 'a' if 1 else 'b' if 2 else 'c' }}|{{ 1 if false }}|"), "a||");
}

TEST(JinjaExpressions, SubscriptsAndSlices) {
    EXPECT_EQ(render("{{ 'abc'[1] }}{{ 'abc'[-1] }}{{ 'abc'[::-1] }}{{ 'abc'[1:] }}"), "bccbabc");
    EXPECT_EQ(render("{{ 'h\u00e9llo'[1] }}{{ 'h\u00e9llo'[::-1] }}"), "\u00e9oll\u00e9h");
    EXPECT_EQ(
        render("{{ [1, 2, 3][1:] }}{{ [1, 2, 3][::2] }}{{ [1, 2, 3][-2:] }}{{ (1, 2, 3)[1:] }}"),
        "[2, 3][1, 3][2, 3](2, 3)");
    EXPECT_EQ(render("{{ m['role'] }}{{ m.role }}", {{"m", {{"role", "user"}}}}), "useruser");
    EXPECT_EQ(render("{{ [1, 2][5] }}|{{ 'abc'[10] }}|"), "||");
}

TEST(JinjaExpressions, AttributeLookupPrefersPythonMethodsOnDicts) {
    // d.items is the dict method; d['items'] is the key.
    EXPECT_EQ(render("{{ d['items'] }} {{ d.items() | list }}", {{"d", {{"items", 1}}}}),
              "1 [('items', 1)]");
    EXPECT_EQ(render("{{ d.get('a') }} {{ d.get('b') }} {{ d.get('b', 2) }}", {{"d", {{"a", 1}}}}),
              "1 None 2");
    EXPECT_EQ(
        render("{{ d.keys() | list }} {{ d.values() | list }}", {{"d", {{"a", 1}, {"b", 2}}}}),
        "['a', 'b'] [1, 2]");
}

TEST(JinjaExpressions, UndefinedPrintsEmptyButFailsWhenUsed) {
    EXPECT_EQ(render("[{{ missing }}]"), "[]");
    EXPECT_EQ(render("{{ missing | length }} {{ missing is defined }} {{ not missing }}"),
              "0 False True");
    EXPECT_EQ(
        render("{% for x in missing %}x{% endfor %}|{{ m.absent }}|", {{"m", ojson::object()}}),
        "||");
    EXPECT_EQ(render("{{ [missing] }}"), "[Undefined]");
    // Jinja2's default Undefined: attributes, arithmetic and calls raise.
    EXPECT_NE(render_error("{{ missing.attr }}").find("'missing' is undefined"), std::string::npos);
    EXPECT_NE(render_error("{{ m.a.b }}", {{"m", ojson::object()}})
                  .find("'dict object' has no attribute 'a'"),
              std::string::npos);
    EXPECT_NE(render_error("{{ 'x' + missing }}").find("'missing' is undefined"),
              std::string::npos);
}

TEST(JinjaExpressions, StringMethods) {
    EXPECT_EQ(render("{{ 'a,b,,c'.split(',') }}{{ ' a  b '.split() }}{{ 'a-b-c'.rsplit('-', 1) }}"),
              "['a', 'b', '', 'c']['a', 'b']['a-b', 'c']");
    EXPECT_EQ(
        render(
            "[{{ ' x '.strip() }}][{{ 'xxhixx'.strip('x') }}][{{ '\\n\\nx\\n'.lstrip('\\n') }}]"),
        "[x][hi][x\n]");
    EXPECT_EQ(render("{{ 'abc'.startswith('a') }}{{ 'abc'.endswith(('c', 'x')) }}{{ "
                     "'abc'.startswith('b', 1) }}"),
              "TrueTrueTrue");
    EXPECT_EQ(
        render("{{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ 'Ab'.swapcase() }}"),
        "Hello World Hello aB");
    EXPECT_EQ(render("{{ 'abcabc'.find('c') }}{{ 'abcabc'.rfind('c') }}{{ 'abc'.find('z') }}{{ "
                     "'aaaa'.count('aa') }}"),
              "25-12");
    EXPECT_EQ(render("{{ '{} {x}'.format(1, x='y') }} {{ '{:>5}|{:05.2f}|{:,}'.format('a', "
                     "3.14159, 1234567) }}"),
              "1 y     a|03.14|1,234,567");
    EXPECT_EQ(render("{{ '%s-%d-%05.1f-%x' % ('a', 3, 2.25, 255) }}"), "a-3-002.2-ff");
    EXPECT_EQ(render("{{ '\u00c9t\u00e9'.upper() }} {{ '\u00c9T\u00c9'.lower() }}"),
              "\u00c9T\u00c9 \u00e9t\u00e9");
}

TEST(JinjaExpressions, MutatingMethodsAreRefusedBySandbox) {
    EXPECT_NE(render_error("{{ x.append(1) }}", {{"x", ojson::array()}})
                  .find("access to attribute 'append' of 'list' object is unsafe."),
              std::string::npos);
    EXPECT_NE(render_error("{{ x.update({}) }}", {{"x", ojson::object()}}).find("unsafe"),
              std::string::npos);
}

TEST(JinjaExpressions, GlobalsRangeDictNamespace) {
    EXPECT_EQ(
        render("{{ range(3) | list }}{{ range(1, 10, 3) | list }}{{ range(5, 0, -2) | list }}"),
        "[0, 1, 2][1, 4, 7][5, 3, 1]");
    EXPECT_EQ(render("{{ dict(a=1, b=2) }}"), "{'a': 1, 'b': 2}");
    EXPECT_EQ(render("{{ namespace(a=1) }}"), "<Namespace {'a': 1}>");
    EXPECT_NE(render_error("{{ range(100001) | length }}").find("MAX_RANGE"), std::string::npos);
    EXPECT_EQ(render("{{ strftime_now('%Y') | length }}"), "4");
}

}  // namespace
}  // namespace anelm::jinja::test
