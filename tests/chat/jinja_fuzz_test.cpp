// Bounded fuzzing: random and mutated templates must render or throw
// anelm::Error, never crash or throw anything else.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "base/error.h"
#include "chat/jinja_template.h"
#include "test_support.h"

namespace anelm::jinja {
namespace {

using ojson = nlohmann::ordered_json;

const ojson& context() {
    static const ojson c = ojson::parse(R"({
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": " hi "},
                     {"role": "assistant", "content": "<think>r</think>a",
                      "tool_calls": [{"function":
                          {"name": "f", "arguments": {"a": [1, 2.5, null]}}}]},
                     {"role": "tool", "content": "ok"}],
        "tools": [{"type": "function", "function": {"name": "f"}}],
        "x": 3, "s": "a,b", "add_generation_prompt": true, "bos_token": "<s>"})");
    return c;
}

// Renders; only anelm::Error may come out.
void survive(const std::string& source) {
    try {
        Template t(source, "fuzz");
        t.render(context());
    } catch (const Error&) {
    }
}

const char* const fragments[] = {
    "{{",
    "}}",
    "{%",
    "%}",
    "{#",
    "#}",
    "{%-",
    "-%}",
    "{{-",
    "-}}",
    " ",
    "\n",
    "x",
    "'a'",
    "\"b\"",
    "0",
    "7",
    "-1",
    "2.5",
    "1e308",
    "99999999999999999999",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    ".",
    "|",
    "~",
    "+",
    "-",
    "*",
    "/",
    "//",
    "%",
    "**",
    "==",
    "!=",
    "<",
    ">=",
    "=",
    " if ",
    " else ",
    " in ",
    " not ",
    " and ",
    " or ",
    " is ",
    "for ",
    "endfor",
    "if ",
    "elif ",
    "endif",
    "else",
    "set ",
    "endset",
    "macro ",
    "endmacro",
    "call ",
    "endcall",
    "filter ",
    "endfilter",
    "with ",
    "endwith",
    "raw",
    "endraw",
    "break",
    "continue",
    "loop",
    "loop.index",
    "loop(",
    "messages",
    "m",
    "m.content",
    "range(9)",
    "namespace(",
    "ns.a",
    "caller()",
    "tojson",
    "trim",
    "map(attribute='role')",
    "select",
    "join",
    "length",
    "items",
    "defined",
    "none",
    "string",
    "mapping",
    "raise_exception('e')",
    "x.split(',')",
    "[::-1]",
    "[1:]",
    "[-1]",
    "'\\u00e9'",
    "'\\x'",
    "\xc3",
    "\xff",
    "recursive",
    "*",
    "**x",
    "varargs",
    "kwargs",
    "dict(a=1)",
    "cycler(1)",
    "joiner()",
    "strftime_now('%Y')",
};

TEST(JinjaFuzz, RandomFragmentsNeverCrash) {
    std::mt19937 rng(1234);
    std::uniform_int_distribution<size_t> pick(0, std::size(fragments) - 1);
    std::uniform_int_distribution<int> len(1, 40);
    for (int i = 0; i < 4000; ++i) {
        std::string source;
        for (int k = len(rng); k > 0; --k) source += fragments[pick(rng)];
        survive(source);
    }
}

TEST(JinjaFuzz, WellFormedRandomTemplatesNeverCrash) {
    // Balanced statements around random expressions reach the evaluator more often.
    std::mt19937 rng(99);
    const char* const exprs[] = {"x",
                                 "m",
                                 "m.content",
                                 "loop.index",
                                 "messages[::-1]",
                                 "x * 'ab'",
                                 "m.tool_calls | first",
                                 "ns.a ~ x",
                                 "range(x)",
                                 "s.split(',')",
                                 "m | tojson(indent=x)",
                                 "caller is defined",
                                 "messages | map(attribute='role') | list",
                                 "x // 0",
                                 "none.a",
                                 "undefined_name.a",
                                 "(1, 2)[5:]",
                                 "m['content'][::2]"};
    auto expr = [&] { return std::string(exprs[rng() % std::size(exprs)]); };
    std::function<std::string(int)> body = [&](int depth) {
        std::string out;
        for (int n = static_cast<int>(rng() % 3); n >= 0; --n) {
            const int r = depth > 3 ? 0 : static_cast<int>(rng() % 6);
            if (r == 0) out += "{{ " + expr() + " }}";
            if (r == 1)
                out += "{% if " + expr() + " %}" + body(depth + 1) + "{% else %}" +
                       body(depth + 1) + "{% endif %}";
            if (r == 2)
                out += "{% for m in " + expr() + " recursive %}" + body(depth + 1) + "{% endfor %}";
            if (r == 3) out += "{% set ns.a = " + expr() + " %}";
            if (r == 4)
                out += "{% macro mac(a) %}" + body(depth + 1) +
                       "{{ mac(a) }}{% endmacro %}{{ mac(1) }}";
            if (r == 5)
                out += "{% for m in messages %}{% if loop.index > x %}{% break %}{% endif %}" +
                       body(depth + 1) + "{% endfor %}";
        }
        return out;
    };
    for (int i = 0; i < 800; ++i) survive("{% set ns = namespace(a=0) %}" + body(0));
}

TEST(JinjaFuzz, MutatedOfficialTemplatesNeverCrash) {
    ANELM_REQUIRE_SHARED("tokenizers/chat-templates/Qwen-Qwen3.jinja");
    std::vector<std::string> sources;
    for (const char* name : {"Qwen-Qwen3.jinja", "meta-llama-Llama-3.1-8B-Instruct.jinja",
                             "google-gemma-3-it.jinja"}) {
        std::ifstream in(test::shared_path(std::string("tokenizers/chat-templates/") + name));
        std::ostringstream ss;
        ss << in.rdbuf();
        sources.push_back(ss.str());
    }
    std::mt19937 rng(7);
    const std::string alphabet = "{}%#-+()[]'\".,|~0123456789 \nxe";
    for (int i = 0; i < 1500; ++i) {
        std::string s = sources[i % sources.size()];
        for (int k = 1 + static_cast<int>(rng() % 4); k > 0; --k) {
            const size_t at = rng() % s.size();
            switch (rng() % 3) {
                case 0:
                    s.erase(at, 1 + rng() % 8);
                    break;
                case 1:
                    s.insert(at, 1, alphabet[rng() % alphabet.size()]);
                    break;
                default:
                    s[at] = alphabet[rng() % alphabet.size()];
            }
        }
        survive(s);
    }
}

}  // namespace
}  // namespace anelm::jinja
