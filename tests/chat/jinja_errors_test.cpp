// Errors name the template and the line: "NAME:LINE: message", with Jinja2's
// messages and the line Jinja2 reports.
#include "jinja_test_util.h"

namespace anelm::jinja::test {
namespace {

TEST(JinjaErrors, RaiseExceptionNamesTemplateAndLine) {
    EXPECT_EQ(render_error("line1\n{{ raise_exception('boom') }}"), "t:2: boom");
    try {
        Template("a\n\nb {{ raise_exception('Roles must alternate') }}", "chat.jinja")
            .render(ojson::object());
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "chat.jinja:3: Roles must alternate");
    }
}

TEST(JinjaErrors, RuntimeErrorsReportTheStatementLine) {
    EXPECT_EQ(render_error("a\n\n{% if x %}\n{% endif %}\n{{ y.z }}"), "t:5: 'y' is undefined");
    EXPECT_EQ(render_error("{% for i in [1] %}\n\n{{ i.a.b }}\n{% endfor %}"),
              "t:3: 'int object' has no attribute 'a'");
    EXPECT_EQ(
        render_error(
            "{% macro m() %}\n\n{{ raise_exception('in macro') }}\n{% endmacro %}\nx\n{{ m() }}"),
        "t:3: in macro");
    EXPECT_EQ(render_error("{% if false %}\n{% elif missing.x %}\n{% endif %}"),
              "t:2: 'missing' is undefined");
    EXPECT_EQ(render_error("{{ 'a' + 1 }}"), "t:1: can only concatenate str (not \"int\") to str");
    EXPECT_EQ(render_error("{{ 1 // 0 }}"), "t:1: integer division or modulo by zero");
    EXPECT_EQ(render_error("{% for i in none %}{% endfor %}"),
              "t:1: 'NoneType' object is not iterable");
}

TEST(JinjaErrors, RendersStopAfterAMillionLoopIterationsAndCalls) {
    const std::string limit = "t:1: the template ran more than 1000000 loop iterations and calls";
    EXPECT_EQ(render_error("{% for a in range(2000) %}{% for b in range(1000) %}{% endfor %}"
                           "{% endfor %}"),
              limit);
    // Each call recurses twice: 2^40 calls within the depth limit.
    EXPECT_EQ(render_error("{% macro m(n) %}{% if n %}{{ m(n - 1) }}{{ m(n - 1) }}{% endif %}"
                           "{% endmacro %}{{ m(40) }}"),
              limit);
    EXPECT_EQ(render_error("{% for a in range(100000) if a > 0 %}{% endfor %}"
                           "{% for a in range(100000) %}{% for b in range(10) if b %}{% endfor %}"
                           "{% endfor %}"),
              limit);
    // Just under the budget renders.
    EXPECT_EQ(
        render("{% for a in range(999) %}{% for b in range(1000) %}{% endfor %}{% endfor %}ok"),
        "ok");
}

TEST(JinjaErrors, OutputsAndExpressionsHaveCeilings) {
    // printf-style padding repeated past the output cap.
    std::string many;
    for (int i = 0; i < 1000; ++i) many += "%(a)99999d";
    EXPECT_EQ(render_error("{{ '" + many + "' % {'a': 1} }}"), "t:1: result too large");
    EXPECT_EQ(render_error("{{ [1] | batch(1000000000000, 0) | list }}"),
              "t:1: batch() linecount too large to fill");
    EXPECT_EQ(render("{{ [1, 2, 3] | batch(2, 0) | list }}"), "[[1, 2], [3, 0]]");
    // A chain of operators is a tree as deep as it is long.
    std::string sum = "1";
    for (int i = 0; i < 5000; ++i) sum += " + 1";
    EXPECT_EQ(render_error("{{ " + sum + " }}"), "t:1: expression too long");
    std::string filters = "'x'";
    for (int i = 0; i < 5000; ++i) filters += " | trim";
    EXPECT_EQ(render_error("{{ " + filters + " }}"), "t:1: expression too long");
    std::string short_sum = "0";
    for (int i = 0; i < 500; ++i) short_sum += " + 1";
    EXPECT_EQ(render("{{ " + short_sum + " }}"), "500");
}

TEST(JinjaErrors, SyntaxErrors) {
    EXPECT_EQ(
        render_error("\n\n{% if x %}"),
        "t:3: Unexpected end of template. Jinja was looking for the following tags: 'elif' or "
        "'else' or 'endif'. The innermost block that needs to be closed is 'if'.");
    EXPECT_EQ(render_error("{% for i in x %}\n{% endif %}"),
              "t:2: Encountered unknown tag 'endif'. Jinja was looking for the following tags: "
              "'endfor' or 'else'. The innermost block that needs to be closed is 'for'.");
    EXPECT_EQ(
        render_error("{% if x %}{% for i in x %}\n{% endif %}"),
        "t:2: Encountered unknown tag 'endif'. You probably made a nesting mistake. Jinja is "
        "expecting this tag, but currently looking for 'endfor' or 'else'. The innermost block "
        "that needs to be closed is 'for'.");
    EXPECT_EQ(render_error("{{ }}"), "t:1: Expected an expression, got 'end of print statement'");
    EXPECT_EQ(render_error("{{ (1 }}"), "t:1: unexpected '}', expected ')'");
    EXPECT_EQ(render_error("{{ 'abc }}"), "t:1: unexpected char \"'\" at 3");
    EXPECT_EQ(render_error("{# comment"), "t:1: Missing end of comment tag");
    EXPECT_EQ(render_error("{% foo %}"), "t:1: Encountered unknown tag 'foo'.");
    EXPECT_EQ(render_error("{% break %}"), "t:1: 'break' outside loop");
}

TEST(JinjaErrors, UnknownFiltersFailAtCompileTimeUnlessGuarded) {
    EXPECT_EQ(render_error("\n{{ x | nofilter }}"), "t:2: No filter named 'nofilter'.");
    EXPECT_EQ(render_error("{{ 1 is notatest }}"), "t:1: No test named 'notatest'.");
    // Inside an if, Jinja2 compiles the template and fails only if the filter runs.
    EXPECT_EQ(render("{% if false %}{{ x | nofilter }}{% endif %}ok"), "ok");
    EXPECT_EQ(render_error("{% if true %}{{ x | nofilter }}{% endif %}"),
              "t:1: No filter named 'nofilter' found.");
}

TEST(JinjaErrors, RuntimeLimitsAreErrorsNotCrashes) {
    EXPECT_NE(render_error("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}").find("recursion"),
              std::string::npos);
    EXPECT_NE(render_error("{{ 'x' * 100000000 }}").find("too large"), std::string::npos);
    std::string deep(300, '(');
    EXPECT_NE(
        render_error("{{ " + deep + "1" + std::string(300, ')') + " }}").find("nested too deeply"),
        std::string::npos);
}

}  // namespace
}  // namespace anelm::jinja::test
