#!/usr/bin/env python3
"""Differential fuzz of the crate's template lexing against Jinja2 as transformers configures it.

    pip install transformers jinja2
    cargo build --release --bin rtok
    python3 scripts/fuzz_template_syntax.py [--seed 1] [--count 1500] [--rtok target/release/rtok] [--exprs]

Random templates join whitespace runs (spaces, tabs, newlines, CR LF, U+3000,
NBSP, form feeds, U+2028, NEL), statements with every whitespace-control marker
(`{%- ... -%}`, `{%+ ... +%}`), comments, expressions with string literals
in Python's escapes (`\\n`, `\\a`, `\\/`, `\\x41`, `\\u00e9`, `\\U0001F600`,
octal, a backslash before a newline or a non-ASCII char, truncated escapes),
`{% raw %}` blocks with any markers, nested `if`/`else`, `for`, `macro` and
`filter` blocks. Each template is rendered by transformers'
`_compile_jinja_template` (`trim_blocks`, `lstrip_blocks`) and by `rtok chat
--template`, with one user message; the output must be identical, or both
must refuse. Prints the first differences and exits 1 if there was any.

`--exprs`: random expressions instead, `{{ E }}` over a context of strings
(cased, accented, whitespace-padded), numbers, lists, dicts, `None` and
nested tool calls passed as `--kwargs`: literals, filters, string and dict
methods, tests, binary operators, subscripts and stepped slices, conditional
expressions. Jinja2 and the crate differ on many of these where a real
template would not go (an operator Python refuses on mixed types, `range`'s
repr, unary `+`), so this mode reports, and it is the way panics were found
(invariant `render-equals-transformers`): any output with `panicked` or `engine failed` is one.
DESIGN.md invariant `render-equals-transformers` has what it found. Known and left out: octal escapes
above `\\377` (minijinja's lexer refuses them before the crate sees the
literal), `\\N{...}` names, and U+001C..U+001F next to a `-` marker (Python
strips them as whitespace).
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

from transformers.utils.chat_template_utils import _compile_jinja_template  # noqa: E402

TEXTS = ["a", " ", "  ", "\n", "\n\n", "\t", " \n", "x \n  ", "\n  ", "b\n", "\r\n", " \\\n",
         "\u3000", "\xa0", "\x0c", "\x0b", "\u2028", "\x85", "\r"]
LITERALS = ["\\n", "\\\\", "\\t", "a\\\nb", "\\x41", "\\/", "\\a", "\\u00e9", "\\U0001F600", "\\101",
            "\\\u00e9", "\\'", '\\"', "\\v\\b\\f", "\\d", "\\U00110000", "\\x4g"]
MESSAGES = [{"role": "user", "content": "hi"}]
CONTEXT = {"s": "Hello World ß é", "n": 3, "f": 2.5, "g": -0.5, "l": [3, 1, 2], "d": {"b": 1, "a": 2}, "e": "",
           "t": True, "z": None, "ls": ["b", "a", "C"], "nested": [{"name": "x", "v": 1}, {"name": "y", "v": 2, "w": None}],
           "u": "  ǅungla İstanbul ΣΑΣ  ", "num": "42", "fl": "3.14", "big": 12345678901234567890,
           "tool": {"function": {"name": "f", "arguments": {"a": [1, "x"]}}}}
ATOMS = list(CONTEXT) + ["'abc'", '"x y"', "0", "1", "-2", "2.0", "0.5", "[1, 2]", "{'k': 1}", "none", "true", "false",
                         "messages[0]['content']", "range(3)", "'%s-%d'", "''", "'a,b,,c'", "1e3", "[]"]
FILTERS = ["length", "lower", "upper", "title", "capitalize", "trim", "string", "int", "float", "abs", "first", "last",
           "list", "sort", "reverse", "join(', ')", "join", "default('D')", "default('D', true)", "tojson",
           "tojson(indent=2)", "replace('a', 'b')", "round", "round(1)", "round(1, 'floor')", "unique", "sum", "min",
           "max", "dictsort", "items", "map('upper')", "map(attribute='name')", "selectattr('v')",
           "rejectattr('v', 'equalto', 1)", "select('odd')", "batch(2)|list", "slice(2)|list", "wordcount",
           "center(9)", "truncate(5)", "indent(2)", "e", "safe", "count", "int(7)", "float(1.5)", "sort(reverse=true)",
           "sort(attribute='name')", "groupby('v')|list", "sum(attribute='v')", "map('length')|list",
           "reject('none')|list", "attr('name')", "trim('x')", "batch(0)|list", "slice(0)|list"]
METHODS = ["upper()", "lower()", "strip()", "strip('H')", "split()", "split(' ')", "split(',', 1)", "startswith('H')",
           "endswith('d')", "replace('l', 'L')", "title()", "capitalize()", "items()", "keys()", "values()", "get('a')",
           "get('zz', 5)", "count('l')", "find('o')", "lstrip()", "rstrip()", "isdigit()", "isalpha()", "splitlines()",
           "format(1, 2)", "rsplit(' ', 1)", "partition(' ')", "zfill(5)", "swapcase()", "center(11, '*')", "ljust(8)",
           "isupper()", "islower()", "isspace()", "join(['a', 'b'])", "index('l')", "startswith(('a', 'H'))"]
TESTS = ["defined", "undefined", "none", "string", "number", "mapping", "iterable", "sequence", "even", "odd",
         "divisibleby(3)", "divisibleby(0)", "in(l)", "true", "false", "lower", "upper", "boolean", "integer", "float",
         "sameas(none)", "eq(3)", "gt(1)", "ne('x')"]
OPERATORS = ["+", "-", "*", "/", "//", "%", "**", "~", "==", "!=", "<", ">", "<=", ">=", "and", "or", "in", "not in"]
SUBSCRIPTS = ["[0]", "[-1]", "[1:]", "[::-1]", "['a']", ".name", "[:2]", "['name']", "[0:1]", "[:0:-1]", "[::2]",
              "[-1:-4:-1]"]


def expression(rng, depth=0):
    k = rng.randrange(10) if depth < 3 else 0
    sub = lambda: expression(rng, depth + 1)  # noqa: E731
    if k <= 2:
        return rng.choice(ATOMS)
    if k == 3:
        return sub() + "|" + rng.choice(FILTERS)
    if k == 4:
        return "(" + sub() + ")." + rng.choice(METHODS)
    if k == 5:
        return "(" + sub() + " " + rng.choice(OPERATORS) + " " + sub() + ")"
    if k == 6:
        return "(" + sub() + " is " + rng.choice(["", "not "]) + rng.choice(TESTS) + ")"
    if k == 7:
        return "(" + sub() + ")" + rng.choice(SUBSCRIPTS)
    if k == 8:
        return "(" + sub() + " if " + sub() + " else " + sub() + ")"
    return rng.choice(["-", "not "]) + "(" + sub() + ")"


def template(rng):
    def ws():
        return rng.choice(["", "-", "+"])

    def tag(body):
        return "{%" + ws() + " " + body + " " + ws() + "%}"

    def frag(depth):
        k = rng.randrange(12)
        if k < 3:
            return rng.choice(TEXTS)
        if k == 3:
            return tag("set x = 1")
        if k == 4:
            return "{#" + ws() + " c " + ws() + "#}"
        if k == 5:
            return "{{" + rng.choice(["", "-"]) + " 'v' " + rng.choice(["", "-"]) + "}}"
        if k == 6:
            inner = "".join(rng.choice(TEXTS + ["r", "{{ y }}"]) for _ in range(rng.randrange(3)))
            return tag("raw") + inner + tag("endraw")
        if k == 7 and depth < 2:
            other = tag("else") + body(depth + 1) if rng.random() < 0.3 else ""
            return tag("if true") + body(depth + 1) + other + tag("endif")
        if k == 8 and depth < 2:
            return tag("for i in [1, 2]") + body(depth + 1) + tag("endfor")
        if k == 9 and depth < 2:
            return tag("macro m()") + body(depth + 1) + tag("endmacro") + "{{ m() }}"
        if k == 10:
            return "{{ '" + rng.choice(LITERALS) + "' }}"
        if k == 11 and depth < 2:
            return tag("filter upper") + body(depth + 1) + tag("endfilter")
        return rng.choice(TEXTS)

    def body(depth):
        return "".join(frag(depth) for _ in range(rng.randrange(1, 5)))

    return body(0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=1500)
    ap.add_argument("--rtok", default="target/release/rtok")
    ap.add_argument("--exprs", action="store_true", help="random expressions over a context (see above)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    differ = panics = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "template.jinja")
        for _ in range(args.count):
            t = "{{ " + expression(rng) + " }}" if args.exprs else template(rng)
            context = CONTEXT if args.exprs else {}
            try:
                want = ("ok", _compile_jinja_template(t).render(messages=MESSAGES, **context))
            except Exception as e:  # a refusal is a result: the crate must refuse too
                want = ("error", type(e).__name__)
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(t)
            p = subprocess.run([args.rtok, "chat", "--template", path, "--messages", json.dumps(MESSAGES),
                                "--kwargs", json.dumps(context)], capture_output=True)
            if p.returncode == 0:
                got = ("ok", p.stdout.decode("utf-8", "replace"))
            else:
                got = ("error", p.stderr.decode("utf-8", "replace")[:200])
            if "panicked" in got[1] or "engine failed" in got[1]:
                panics += 1
                print(json.dumps({"panic": t, "rtok": got}, ensure_ascii=False))
            elif got[0] != want[0] or (got[0] == "ok" and got[1] != want[1]):
                differ += 1
                if differ <= 8:
                    print(json.dumps({"template": t, "transformers": want, "rtok": got}, ensure_ascii=False))
    print(f"{args.count} {'expressions' if args.exprs else 'templates'}, {differ} differ, {panics} panics")
    sys.exit(1 if panics or (differ and not args.exprs) else 0)


if __name__ == "__main__":
    main()
