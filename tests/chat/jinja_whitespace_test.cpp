// Whitespace control as transformers configures Jinja2: trim_blocks,
// lstrip_blocks, no trailing newline, and the - / + markers. Expected strings
// were checked against Jinja2 3.1.
#include "jinja_test_util.h"

namespace anelm::jinja::test {
namespace {

TEST(JinjaWhitespace, TrimBlocksDropsTheNewlineAfterABlockTag) {
    EXPECT_EQ(render("{% if true %}\nx\n{% endif %}\ny"), "x\ny");
    EXPECT_EQ(render("{# note #}\nx"), "x");
    // Not after a print tag.
    EXPECT_EQ(render("{{ 'a' }}\nb"), "a\nb");
}

TEST(JinjaWhitespace, LstripBlocksRemovesIndentBeforeBlockTags) {
    EXPECT_EQ(render("a\n    {% if true %}\n    b\n    {% endif %}\nc"), "a\n    b\nc");
    EXPECT_EQ(render("  {% if true %}x{% endif %}"), "x");
    // Only whitespace from the line start: text before the tag keeps it.
    EXPECT_EQ(render("x {% if true %}y{% endif %}"), "x y");
    // Not before a print tag.
    EXPECT_EQ(render("  {{ 'v' }}"), "  v");
    EXPECT_EQ(render("line\n    {# comment #}\n    text"), "line\n    text");
}

TEST(JinjaWhitespace, MinusStripsAllWhitespaceOnThatSide) {
    EXPECT_EQ(render("a  \n {%- if true -%}  \n b {%- endif -%} \n c"), "abc");
    EXPECT_EQ(render("a\n\n{{- 'b' -}}\n\nc"), "abc");
    EXPECT_EQ(render("a \n{#- c -#}\n b"), "ab");
}

TEST(JinjaWhitespace, PlusKeepsWhitespace) {
    EXPECT_EQ(render("x\n   {%+ if true %}y{% endif %}"), "x\n   y");
    EXPECT_EQ(render("{% if true +%}\nx{% endif %}"), "\nx");
}

TEST(JinjaWhitespace, OneTrailingNewlineIsDropped) {
    EXPECT_EQ(render("a\n"), "a");
    EXPECT_EQ(render("a\n\n"), "a\n");
    EXPECT_EQ(render("{{ 'a' }}\n"), "a");
}

TEST(JinjaWhitespace, NewlinesAreNormalised) {
    EXPECT_EQ(render("a\r\nb\rc"), "a\nb\nc");
    EXPECT_EQ(render("{% if true %}\r\nx\r\n{% endif %}\r\n"), "x\n");
    // Escapes inside strings are kept as written.
    EXPECT_EQ(render("{{ '\\r\\n' }}"), "\r\n");
}

TEST(JinjaWhitespace, RawBlocksAreNotParsed) {
    EXPECT_EQ(render("{% raw %}{{ not parsed }}{% endraw %}"), "{{ not parsed }}");
    EXPECT_EQ(render("<{%- raw %} a {% endraw -%}>"), "< a >");
    EXPECT_EQ(render("{% raw %}\n  {{ x }}\n  {% endraw %}\nz"), "\n  {{ x }}\nz");
}

TEST(JinjaWhitespace, LoopsKeepTheBodyLayout) {
    EXPECT_EQ(render("{% for x in [1,2] %}\n  {{ x }}\n{% endfor %}\n"), "  1\n  2\n");
    EXPECT_EQ(render("{%- for x in [1,2] -%}\n  {{ x }}\n{%- endfor %}"), "12");
}

}  // namespace
}  // namespace anelm::jinja::test
