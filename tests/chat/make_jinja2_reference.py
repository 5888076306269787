#!/usr/bin/env python3
"""Writes tests/chat/data/jinja2_reference.jsonl: templates rendered by Python's
Jinja2 configured exactly as Hugging Face transformers' apply_chat_template
configures it (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
loopcontrols, tojson = json.dumps(ensure_ascii=False, ...), raise_exception,
strftime_now). jinja2_reference_test.cpp checks the C++ interpreter against it.

Usage: python3 make_jinja2_reference.py [OUT]   (made with Jinja2 3.1.6, Python 3.11)

Cases: hand-written ones, then seeded random expressions, statements,
whitespace markers and conversations through the official chat templates in
../shared/tokenizers/chat-templates. Left out, as differences by design:
outputs showing Python objects the interpreter models as lists (range, dict
views, Markup reprs), integers beyond 64 bits, and expressions Jinja2's
optimizer folds at compile time (it slices constants leniently), found by
rendering with constant folding turned off as well.
"""
import json
import os
import random
import re
import sys
import traceback
from datetime import datetime

import jinja2
from jinja2.compiler import CodeGenerator
from jinja2.ext import loopcontrols
from jinja2.nodes import Impossible
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATES = os.path.join(HERE, "..", "..", "..", "shared", "tokenizers", "chat-templates")


class NoFoldingCodeGenerator(CodeGenerator):
    """Evaluates {{ }} expressions at run time even when they are constant."""

    def _output_child_to_const(self, node, frame, finalize):
        raise Impossible()


def make_env(optimized):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols], optimized=optimized)
    if not optimized:
        env.code_generator_class = NoFoldingCodeGenerator
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env


ENV, PLAIN_ENV = make_env(True), make_env(False)


def render(env, template, context):
    try:
        out = env.from_string(template).render(**context)
        return {"output": re.sub(r" at 0x[0-9a-f]+", "", out)}
    except Exception as e:  # the message and the template line Jinja2 reports
        line = getattr(e, "lineno", None)
        if line is None:
            for frame in traceback.extract_tb(e.__traceback__):
                if frame.filename == "<template>":
                    line = frame.lineno
        return {"error": str(e), "line": line}


MODELLED_DIFFERENTLY = re.compile(
    r"range\(|range object|'range'| range|dict_keys|dict_values|dict_items|Markup|\d{19,}")

# ---- hand-written cases ----

HAND = [
    "{{ 1 }}|{{ -1 }}|{{ 1.0 }}|{{ 1.5 }}|{{ 0.1 }}|{{ 1e16 }}|{{ 1e15 }}|{{ 1.5e-7 }}|{{ 1/3 }}",
    "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7.5 % 2 }} {{ -7.5 % 2 }} {{ 7.0 // 2 }}",
    "{{ 2 ** -1 }} {{ 2 ** 0.5 }} {{ 10 / 4 }} {{ 1 / 0 }}", "{{ 1 // 0 }}", "{{ 1 % 0 }}",
    "{{ none }}{{ None }}{{ true }}{{ False }}{{ [1, 'a', none, true] }}{{ (1,) }}{{ () }}",
    "{{ {'a': 1, 'b': [1, 2]} }}{{ 'it''s' }}{{ \"it's\" }}{{ ['a\\nb', \"it's\", 'q\"'] }}",
    "{{ '\\x41\\u00e9\\t' }}{{ '\\d' }}{{ '\u00e9\u00fc\u4e2d' | length }}",
    "{{ 1 + 2 * 3 }}{{ (1 + 2) * 3 }}{{ 2 ** 3 ** 2 }}{{ -2 ** 2 }}{{ not true }}{{ not 0 }}",
    "{{ 1 == 1.0 }}{{ 1 == true }}{{ (1,) == [1] }}{{ 1 < 2 < 3 }}{{ 3 > 2 > 2 }}{{ [1, 2] < [1, 3] }}",
    "{{ 'a' ~ 1 ~ none }}{{ 'ab' * 3 }}{{ [0] * 3 }}{{ 'x' * -1 }}{{ 1 if false }}|{{ 1 if true else 2 }}",
    "{{ 'a' in 'cat' }}{{ 'z' not in 'cat' }}{{ 1 in [1] }}{{ 'a' in {'a': 1} }}{{ none or 'x' }}{{ 0 and 1 }}",
    "{{ x + 1 }}", "{{ 'a' + x }}", "{{ 'a' + 1 }}", "{{ x.a }}", "{{ [1] + (2,) }}", "{{ {} < [] }}",
    "{{ 1 < 'a' }}", "{{ 'a' in 1 }}", "{{ 1 in 'abc' }}", "{{ 'a' * 2.0 }}", "{{ 'x'.y.z }}",
    "{{ 'abc'[1] }}{{ 'abc'[-1] }}{{ 'abc'[::-1] }}{{ 'h\u00e9llo'[1:3] }}{{ [1, 2, 3][1:] }}{{ [1, 2][5] }}",
    "{{ {'items': 1}.items() | list }}{{ {'items': 1}['items'] }}{{ {'a': 1}.b }}",
    "{{ x.append }}|{{ x.pop() }}",
    "{{ 'a,b,,c'.split(',') }}{{ ' a  b '.split() }}{{ ' a b c '.split(none, 1) }}{{ ' a b c '.rsplit(none, 1) }}",
    "{{ 'xxhixx'.strip('x') }}{{ 'a-b-c'.rsplit('-', 1) }}{{ 'abc'.startswith('b', 1) }}{{ 'abc'.find('c', -1) }}",
    "{{ 'Hello'.swapcase() }}{{ 'hello world'.istitle() }}{{ '123'.isdigit() }}{{ 'a=b=c'.partition('=') }}",
    "{{ '{} {}'.format(1, 'a') }}{{ '{0}-{0}'.format(5) }}{{ '{x!r}'.format(x='q') }}{{ '{:>5}'.format('a') }}",
    "{{ '{:05.2f}'.format(3.14159) }}{{ '{:,}'.format(1234567) }}{{ '{:x}'.format(255) }}{{ '{:e}'.format(0.5) }}",
    "{{ '%s-%d' % ('a', 3) }}{{ '%05.1f' % 2.25 }}{{ '%x' % 255 }}{{ '%r' % 'a' }}{{ '%(a)s' % {'a': 1} }}",
    "{{ 'abc' % [] }}", "{{ 'abc' % 'x' }}", "{{ '%d' % 'x' }}",
    "{{ range(3) | list }}{{ range(5, 0, -2) | list }}{{ dict(a=1) }}{{ namespace(a=1) }}",
    "{{ range(100001) | length }}", "{{ joiner()() }}{% set j = joiner('|') %}{{ j() }}a{{ j() }}b",
    "{% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{{ c.current }}",
    "{{ x | tojson }}", "{{ 'x' | nofilter }}", "{{ 1 is notatest }}",
    "{% if true %}{{ x | nofilter }}{% endif %}", "{% if false %}{{ x | nofilter }}{% endif %}",
    "{{ 1 if true else x | nofilter }}", "{% for i in [] %}{{ i | nofilter }}{% endfor %}",
    "{% for i in range(3) %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
    "{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.depth }}{{ loop.depth0 }},{% endfor %}",
    "{% for i in [] %}x{% else %}empty{% endfor %}",
    "{% for i in range(10) if i is odd %}{{ i }}:{{ loop.index }}/{{ loop.length }} {% endfor %}",
    "{% for i in [1] %}{% break %}{% else %}E{% endfor %}",
    "{% for i in [1, 2] %}{% continue %}{% else %}E{% endfor %}",
    "{% for i in range(3) %}{{ loop.cycle('a', 'b') }}{{ loop.previtem }}{{ loop.nextitem }}{% endfor %}",
    "{% for i in [1, 1, 2] %}{{ loop.changed(i) }}{% endfor %}",
    "{% for a, b in [[1, 2, 3]] %}{% endfor %}", "{% for a, b in [[1]] %}{% endfor %}",
    "{% for i in none %}{% endfor %}", "{% for i in 5 %}{% endfor %}",
    "{% set x = 1 %}{% for i in range(2) %}{{ x }}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set s %}in {{ a }}{% endset %}[{{ s }}]",
    "{% set s | upper %}in{% endset %}{{ s }}", "{% set x = 1 %}{% set x.a = 1 %}",
    "{% macro m(a, b=2) %}{{ a }}+{{ b }}{% endmacro %}{{ m(1) }}{{ m(1, 3) }}{{ m(b=5, a=0) }}{{ m() }}",
    "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, z=3) }}{{ m.name }}",
    "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}", "{% macro m(a) %}{% endmacro %}{{ m(z=1) }}",
    "{% macro m() %}[{{ caller(5) }}]{% endmacro %}{% call(x) m() %}body {{ x }}{% endcall %}",
    "{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}",
    "{% filter upper %}hi {{ 'x' }}{% endfilter %}{% with a = 1 %}{{ a }}{% endwith %}{{ a }}",
    "{% raw %}{{ x }}{% endraw %}", "{{ raise_exception('boom') }}", "a\n{{ raise_exception(1) }}",
    "{% if %}{% endif %}", "{% for %}", "{% if true %}", "{% endif %}", "{% foo %}", "{{ }}", "{{ 1 + }}",
    "{{ (1 }}", "{{ 'abc }}", "{# c", "{% set x = %}", "{{ a.0.b }}", "{{ f(1)(2) }}",
    "{{ x }}{% set x = 5 %}{{ x }}", "{% for i in [1] %}{{ x }}{% endfor %}{% set x = 5 %}",
    "{% macro m() %}{{ x }}{% endmacro %}{{ m() }}{% set x = 5 %}{{ m() }}",
    "{% for i in [1] %}{{ x }}{% endfor %}{% if c %}{% set x = 1 %}{% else %}{% set x = 2 %}{% endif %}",
    "{% for i in [1, 2] %}{% for j in [1] %}{{ x }}{% endfor %}{% set x = i %}{% endfor %}",
    "{% set s %}{{ x }}{% endset %}{{ s }}{% set x = 2 %}",
]

HAND_CONTEXT = {"x": 3, "c": True, "l": [3, 1, 2], "d": {"b": 1, "a": 2}}

# ---- random expressions ----

ATOMS = ["1", "0", "-2", "2.5", "0.1", "3", "'a'", "'ab c'", "''", "'A b'", "none", "true", "false",
         "x", "y", "s", "d", "l", "n", "u", "[1, 2, 3]", "[]", "{'k': 1, 'j': 'v'}", "{}", "(1, 'a')",
         "'\u00e9 \u00fc'", "'  pad  '", "'1,2,,3'", "'Hello World'", "[3, 1, 2]", "['b', 'A', 'c']",
         "[{'a': 1}, {'a': 0}]", "f"]
BINOPS = ["+", "-", "*", "/", "//", "%", "**", "~", "==", "!=", "<", ">", "<=", ">=", "in", "not in",
          "and", "or"]
FILTERS = ["length", "trim", "upper", "lower", "title", "capitalize", "first", "last", "list", "string",
           "int", "float", "abs", "round", "reverse", "sort", "unique", "join", "join(', ')", "tojson",
           "tojson(indent=2)", "items", "default('z')", "default('z', true)", "sum", "min", "max", "count",
           "e", "safe", "wordcount", "center(9)", "truncate(5)", "indent(2)", "map('string')",
           "select('odd')", "reject('none')", "selectattr('a')", "map(attribute='a')", "batch(2)",
           "slice(2)", "dictsort", "replace('a', 'b')", "format(1)", "attr('upper')"]
TESTS = ["defined", "undefined", "none", "string", "number", "integer", "float", "mapping", "iterable",
         "sequence", "boolean", "true", "false", "odd", "even", "divisibleby(2)", "equalto(1)",
         "in([1, 'a'])", "lower", "upper", "callable", "sameas(none)"]
METHODS = ["upper()", "lower()", "strip()", "split()", "split(',')", "startswith('a')", "endswith('c')",
           "replace('a', 'x')", "title()", "get('k')", "items()", "keys()", "count(1)", "index(1)",
           "find('b')", "join(['1', '2'])", "format(1)", "lstrip('p ')", "rsplit(',', 1)", "zfill(4)"]
SUBSCRIPTS = ["0", "-1", "1:", "::-1", "'k'", "'a'", ":2", "x"]
EXPR_CONTEXT = {"x": 2, "y": "yy", "s": "a,b,c", "d": {"k": [1, 2], "a": None},
                "l": [1, "a", None, True], "n": None, "f": 1.5}


def expression(rng, depth=0):
    r = rng.random()
    if depth > 3 or r < 0.3:
        return rng.choice(ATOMS)
    sub = lambda: expression(rng, depth + 1)
    if r < 0.5:
        return f"({sub()} {rng.choice(BINOPS)} {sub()})"
    if r < 0.62:
        return f"{sub()} | {rng.choice(FILTERS)}"
    if r < 0.7:
        return f"({sub()} is {rng.choice(['', 'not '])}{rng.choice(TESTS)})"
    if r < 0.78:
        return f"{sub()}.{rng.choice(METHODS)}"
    if r < 0.84:
        return f"{sub()}[{rng.choice(SUBSCRIPTS)}]"
    if r < 0.9:
        return f"({sub()} if {sub()} else {sub()})"
    if r < 0.95:
        return f"not {sub()}"
    return f"[{sub()}, {sub()}]"

# ---- random statements ----

S_EXPRS = ["x", "i", "j", "ns.a", "loop.index", "loop.first", "loop.last", "loop.length", "loop.previtem",
           "m.role", "m['content']", "m.content | trim", "m.tool_calls | length", "messages | length",
           "messages[-1]['content']", "x + 1", "i * 2", "'s' ~ i", "items | join(',')", "d.k", "k", "v",
           "a ~ b", "q", "none", "'lit'", "mac(i)", "mac(1, 2)", "mac(y=3)", "varargs", "kwargs",
           "caller() if caller is defined else 'nc'"]
S_CONDS = ["true", "false", "x", "i is odd", "loop.first", "loop.last", "m.role == 'user'",
           "m.tool_calls is defined", "not x", "ns.a > 2", "'a' in items", "i > 1", "y is defined"]
S_ITERS = ["range(3)", "items", "messages", "[]", "d", "d.items()", "messages[1:]", "messages[::-1]",
           "items | reverse", "'ab'", "undefined_thing"]
S_TARGETS = ["i", "j", "m", "k, v", "a, b"]
S_TEXTS = ["", "T", " ", "\n", "  \n", "\n  ", "x\n", "\t", " | "]
STMT_CONTEXT = {
    "x": 3, "items": ["a", "b", "c"], "d": {"k": 1, "z": [1]},
    "messages": [{"role": "system", "content": " sys "}, {"role": "user", "content": "hi"},
                 {"role": "assistant", "content": None,
                  "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]},
                 {"role": "tool", "content": "r"}]}


def statements(rng, depth):
    ws = lambda: rng.choice(["", "-"])
    tag = lambda s: "{%" + ws() + " " + s + " " + ws() + "%}"
    out = lambda e: "{{" + ws() + " " + e + " " + ws() + "}}"
    body = lambda: "".join(statement() for _ in range(rng.randint(0, 2)))

    def statement():
        r = rng.random()
        if depth > 2 or r < 0.3:
            return rng.choice(S_TEXTS) + out(rng.choice(S_EXPRS)) + rng.choice(S_TEXTS)
        inner = lambda: statements(rng, depth + 1)
        if r < 0.45:
            s = tag("if " + rng.choice(S_CONDS)) + inner()
            if rng.random() < 0.3:
                s += tag("elif " + rng.choice(S_CONDS)) + inner()
            if rng.random() < 0.4:
                s += tag("else") + inner()
            return s + tag("endif")
        if r < 0.62:
            head = f"for {rng.choice(S_TARGETS)} in {rng.choice(S_ITERS)}"
            if rng.random() < 0.2:
                head += " if " + rng.choice(S_CONDS)
            s = tag(head) + rng.choice(S_TEXTS) + inner()
            if rng.random() < 0.2:
                s += tag("if " + rng.choice(S_CONDS)) + tag(rng.choice(["break", "continue"])) + tag("endif")
            if rng.random() < 0.2:
                s += tag("else") + inner()
            return s + tag("endfor")
        if r < 0.74:
            target = rng.choice(["x", "q", "ns.a", "y", "a, b"])
            return tag(f"set {target} = {rng.choice(S_EXPRS + ['[1, 2]', '(3, 4)'])}")
        if r < 0.78:
            return tag("set q") + inner() + tag("endset")
        if r < 0.83:
            return tag("macro mac(p, y=2)") + out("p") + out("y") + inner() + tag("endmacro")
        if r < 0.86:
            return tag("call mac(5)") + inner() + tag("endcall")
        if r < 0.89:
            return tag("filter upper") + inner() + tag("endfilter")
        if r < 0.92:
            return tag("with x = 7") + inner() + tag("endwith")
        if r < 0.95:
            return "{# c " + rng.choice(S_TEXTS) + " #}"
        return tag("raw") + "{{ raw }}" + rng.choice(S_TEXTS) + tag("endraw")

    return body()

# ---- random whitespace ----

WS_PIECES = ["{% if true %}", "{% endif %}", "{%- if true %}", "{% if true -%}", "{%+ if true %}",
             "{% if true +%}", "{{ 'v' }}", "{{- 'v' }}", "{{ 'v' -}}", "{# c #}", "{#- c #}", "{# c -#}",
             "  ", "\t", "\n", "x", " \n", "\n  ", "{% for i in range(2) %}", "{% endfor %}",
             "{%- for i in range(2) -%}", "{%- endfor -%}", "{% raw %}", "{% endraw %}", "{% set a = 1 %}",
             "\r\n", "\r", "\u00a0", "\u3000"]


def balanced(pieces):
    stack = []
    for p in pieces:
        for word, opener in (("endif", "if"), ("endfor", "for"), ("endraw", "raw")):
            if word in p:
                if not stack or stack.pop() != opener:
                    return False
                break
        else:
            for opener in ("if", "for", "raw"):
                if re.search(r"[{][%][-+]? " + opener + r"\b", p):
                    stack.append(opener)
    return not stack

# ---- conversations through the official templates ----

TEXTS = ["Hello!", "  padded  ", "\n\nnewlines\n", "", "\u00e9 \u00fc \u4e2d\u6587 \U0001f642",
         "<think>\nreason\n</think>\n\nanswer", "a\tb", "{\"json\": 1}", "line1\nline2"]
TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Get weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["city"]}}}


def conversation(rng):
    def message(role):
        m = {"role": role, "content": rng.choice(TEXTS)}
        if role == "assistant" and rng.random() < 0.3:
            args = rng.choice([{"city": "Paris", "n": 2}, "{\"city\": \"Rome\"}"])
            m["tool_calls"] = [{"type": "function", "function": {"name": "get_weather", "arguments": args}}]
        if role == "assistant" and rng.random() < 0.2:
            m["reasoning_content"] = rng.choice(TEXTS)
        if rng.random() < 0.1:
            m["content"] = [{"type": "text", "text": rng.choice(TEXTS)}, {"type": "image"}]
        return m

    roles = ["system"] if rng.random() < 0.4 else []
    for i in range(rng.randint(1, 5)):
        roles.append(["user", "assistant"][i % 2] if rng.random() < 0.8 else rng.choice(["user", "assistant"]))
        if rng.random() < 0.15:
            roles.append("tool")
    ctx = {"messages": [message(r) for r in roles], "add_generation_prompt": rng.random() < 0.6,
           "bos_token": "<bos>", "eos_token": "<eos>", "tools": [TOOL] if rng.random() < 0.3 else None,
           "documents": None}
    for key, value, p in (("enable_thinking", rng.random() < 0.5, 0.3), ("date_string", "01 Jan 2025", 0.5),
                          ("tools_in_user_message", False, 0.2), ("builtin_tools", ["get_weather"], 0.1)):
        if rng.random() < p:
            ctx[key] = value
    return ctx


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "data", "jinja2_reference.jsonl")
    rng = random.Random(20261202)
    cases = []  # (kind, template, context name or context, template file)
    cases += [("hand", t, "hand", None) for t in HAND]
    cases += [("expression", "{{ " + expression(rng) + " }}", "expression", None) for _ in range(700)]
    cases += [("statement", "{% set ns = namespace(a=1) %}" + statements(rng, 0), "statement", None)
              for _ in range(400)]
    while len(cases) < 1100 + len(HAND) + 500:
        pieces = [rng.choice(WS_PIECES) for _ in range(rng.randint(1, 8))]
        if balanced(pieces):
            cases.append(("whitespace", "".join(pieces), "hand", None))
    files = sorted(f for f in os.listdir(TEMPLATES) if f.endswith(".jinja"))
    for _ in range(150):
        f = rng.choice(files)
        with open(os.path.join(TEMPLATES, f), encoding="utf-8") as fh:
            cases.append(("chat", fh.read(), conversation(rng), f))

    contexts = {"hand": HAND_CONTEXT, "expression": EXPR_CONTEXT, "statement": STMT_CONTEXT}
    kept, dropped = 0, {}
    with open(out_path, "w", encoding="utf-8") as out:
        out.write(json.dumps({"contexts": contexts}, ensure_ascii=False) + "\n")
        for kind, template, context, file in cases:
            ctx = contexts[context] if isinstance(context, str) else context
            result = render(ENV, template, ctx)
            shown = result.get("output", "") + result.get("error", "")
            if MODELLED_DIFFERENTLY.search(shown):
                dropped["python objects"] = dropped.get("python objects", 0) + 1
                continue
            if result != render(PLAIN_ENV, template, ctx):
                dropped["constant folding"] = dropped.get("constant folding", 0) + 1
                continue
            case = {"kind": kind}
            if file:
                case["template_file"] = file
            else:
                case["template"] = template
            case["context"] = context
            case.update(result)
            out.write(json.dumps(case, ensure_ascii=False) + "\n")
            kept += 1
    print(f"{out_path}: {kept} cases; left out: {dropped}")


if __name__ == "__main__":
    main()
