#!/usr/bin/env python3
"""Differential fuzz of the crate's template lexing against Jinja2 as transformers configures it.

    pip install transformers jinja2
    cargo build --release --bin rtok
    python3 scripts/fuzz_template_syntax.py [--seed 1] [--count 1500] [--rtok target/release/rtok]

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
DESIGN.md claim 374 has what it found. Known and left out: octal escapes
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
    args = ap.parse_args()
    rng = random.Random(args.seed)
    differ = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "template.jinja")
        for _ in range(args.count):
            t = template(rng)
            try:
                want = ("ok", _compile_jinja_template(t).render(messages=MESSAGES))
            except Exception as e:  # a refusal is a result: the crate must refuse too
                want = ("error", type(e).__name__)
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(t)
            p = subprocess.run([args.rtok, "chat", "--template", path, "--messages", json.dumps(MESSAGES)],
                               capture_output=True)
            if p.returncode == 0:
                got = ("ok", p.stdout.decode("utf-8", "replace"))
            else:
                got = ("error", p.stderr.decode("utf-8", "replace")[:200])
            if got[0] != want[0] or (got[0] == "ok" and got[1] != want[1]):
                differ += 1
                if differ <= 8:
                    print(json.dumps({"template": t, "transformers": want, "rtok": got}, ensure_ascii=False))
    print(f"{args.count} templates, {differ} differ")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
