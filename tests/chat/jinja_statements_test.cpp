// Statements, loops and Jinja2's scoping rules.
#include "jinja_test_util.h"

namespace anelm::jinja::test {
namespace {

TEST(JinjaStatements, IfElifElse) {
    const char* t = "{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %}";
    EXPECT_EQ(render(t, {{"x", 1}}), "one");
    EXPECT_EQ(render(t, {{"x", 2}}), "two");
    EXPECT_EQ(render(t, {{"x", 3}}), "many");
}

TEST(JinjaStatements, LoopVariables) {
    EXPECT_EQ(
        render("{% for i in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
               "{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }},{% endfor %}"),
        "1032TrueFalse3,2121FalseFalse3,3210FalseTrue3,");
    EXPECT_EQ(render("{% for i in range(3) %}{{ loop.previtem }}-{{ loop.nextitem }};{% endfor %}"),
              "-1;0-2;1-;");
    EXPECT_EQ(render("{% for i in range(3) %}{{ loop.cycle('a', 'b') }}{% endfor %}"), "aba");
    EXPECT_EQ(
        render("{% for i in [1,1,2,2,3] %}{% if loop.changed(i) %}{{ i }}{% endif %}{% endfor %}"),
        "123");
    EXPECT_EQ(render("{% for i in range(2) %}{% for j in range(2) %}{{ loop.index }}{% endfor %}"
                     "{{ loop.index }}|{% endfor %}"),
              "121|122|");
}

TEST(JinjaStatements, LoopFilterElseAndControl) {
    EXPECT_EQ(render("{% for i in range(10) if i is odd %}{{ i }}:{{ loop.index }}/{{ loop.length "
                     "}} {% endfor %}"),
              "1:1/5 3:2/5 5:3/5 7:4/5 9:5/5 ");
    EXPECT_EQ(render("{% for i in [] %}x{% else %}empty{% endfor %}"), "empty");
    EXPECT_EQ(
        render("{% for i in range(5) %}{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %}"),
        "012");
    EXPECT_EQ(
        render(
            "{% for i in range(5) %}{% if i is odd %}{% continue %}{% endif %}{{ i }}{% endfor %}"),
        "024");
    // Jinja2 runs the else block unless an iteration reached the end of the body.
    EXPECT_EQ(render("{% for i in [1] %}{% break %}{% else %}E{% endfor %}"), "E");
}

TEST(JinjaStatements, LoopUnpackingAndDicts) {
    EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k "
                     "}}{% endfor %}",
                     {{"d", {{"b", 1}, {"a", 2}}}}),
              "b=1;a=2;ba");
    EXPECT_EQ(render("{% for k, v in d | items %}{{ k }}{{ v }}{% endfor %}", {{"d", {{"x", 1}}}}),
              "x1");
    EXPECT_NE(
        render_error("{% for a, b in [[1, 2, 3]] %}{% endfor %}").find("too many values to unpack"),
        std::string::npos);
}

TEST(JinjaStatements, RecursiveLoops) {
    const ojson tree = {{{"n", "a"}, {"c", {{{"n", "b"}, {"c", ojson::array()}}}}}};
    EXPECT_EQ(
        render("{% for x in t recursive %}{{ x.n }}{{ loop.depth }}[{{ loop(x.c) }}]{% endfor %}",
               {{"t", tree}}),
        "a1[b2[]]");
}

TEST(JinjaStatements, SetTupleBlockAndNamespace) {
    EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ a }}{{ b }}"), "12");
    EXPECT_EQ(render("{% set x %}inner {{ 1 + 1 }}{% endset %}[{{ x }}]"), "[inner 2]");
    EXPECT_EQ(render("{% set x | upper %}inner{% endset %}[{{ x }}]"), "[INNER]");
    EXPECT_EQ(render("{% set ns = namespace(x=1) %}{% for i in range(3) %}{% set ns.x = ns.x + i %}"
                     "{% endfor %}{{ ns.x }}"),
              "4");
    EXPECT_NE(render_error("{% set x = 1 %}{% set x.a = 1 %}").find("non-namespace"),
              std::string::npos);
}

TEST(JinjaStatements, ScopesFollowJinja2) {
    // A loop body is a scope of its own; an if body is not.
    EXPECT_EQ(render("{% set x = 1 %}{% for i in range(2) %}{{ x }}{% set x = 2 %}{{ x }}{% endfor "
                     "%}{{ x }}"),
              "12121");
    EXPECT_EQ(render("{% if true %}{% set y = 5 %}{% endif %}{{ y }}"), "5");
    EXPECT_EQ(render("{% with a = 1 %}{{ a }}{% endwith %}[{{ a }}]"), "1[]");
    // A name first assigned at template level is undefined before that, even
    // in a loop that reads it, instead of taking the context's value.
    EXPECT_EQ(render("{{ x }}{% set x = 5 %}{{ x }}", {{"x", 3}}), "35");
    EXPECT_EQ(render("{% for i in [1] %}[{{ x }}]{% endfor %}{% set x = 5 %}", {{"x", 3}}), "[]");
    EXPECT_EQ(render("{% macro m() %}[{{ x }}]{% endmacro %}{{ m() }}{% set x = 5 %}{{ m() }}",
                     {{"x", 3}}),
              "[][5]");
    // Assigned only under if: the context value shows through until then.
    EXPECT_EQ(render("{% for i in [1] %}{{ x }}{% endfor %}{% if c %}{% set x = 1 %}{% endif %}",
                     {{"x", 3}, {"c", true}}),
              "3");
}

TEST(JinjaStatements, MacrosAndCallBlocks) {
    EXPECT_EQ(render("{% macro m(a, b=2) %}{{ a }}+{{ b }}{% endmacro %}{{ m(1) }} {{ m(1, 3) }} "
                     "{{ m(b=5, a=0) }} {{ m() }}"),
              "1+2 1+3 0+5 +2");
    EXPECT_EQ(
        render("{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, z=3) }}"),
        "1(2,){'z': 3}");
    EXPECT_EQ(render("{% macro m() %}[{{ caller(5) }}]{% endmacro %}{% call(x) m() %}body {{ x "
                     "}}{% endcall %}"),
              "[body 5]");
    EXPECT_NE(
        render_error("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}").find("takes not more than 1"),
        std::string::npos);
}

TEST(JinjaStatements, FilterBlockWithAndGeneration) {
    EXPECT_EQ(render("{% filter upper %}hello {{ 'x' }}{% endfilter %}"), "HELLO X");
    EXPECT_EQ(render("{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}"), "3");
    // transformers' {% generation %} marks assistant text and renders it unchanged.
    EXPECT_EQ(render("{% generation %}reply{% endgeneration %}"), "reply");
}

}  // namespace
}  // namespace anelm::jinja::test
