#!/usr/bin/env python3
"""Differential fuzz of `rtok chat` against transformers' `apply_chat_template`
on random conversations, for every shared `tokenizer.json` (`fuzz_reference.py`'s list; one without a
chat template must be refused by both).

    pip install transformers jinja2
    cargo build --release --bin rtok
    python3 scripts/fuzz_chat.py [--shared ../shared] [--seed 1] [--count 50] [--only NAME,...] [--encode]

Conversations mix system, user, assistant and tool turns whose contents join
pieces that templates and tokenizers treat specially: empty and
whitespace-only text, leading and trailing spaces, CR LF, U+2028, Jinja
delimiters, other models' special tokens, `<think>` blocks, combining marks,
CJK, emoji, JSON-looking words. Assistant turns may carry tool calls (their
arguments a dict, a JSON string or nested values) and `reasoning_content`;
requests may carry tools, documents, `enable_thinking`,
`add_generation_prompt` or `continue_final_message`. `date_string` is fixed so
the templates that read the clock render the same in both. A render must be
identical, byte for byte, or both sides must refuse the request. With
`--encode` the ids are compared instead: `rtok chat --encode --special-tokens
parse` against `apply_chat_template(..., tokenize=True)` (which parses special
tokens in the render, as `parse` does). Prints the first differences and exits
1 if there was any.
"""

import json
import os
import random
import subprocess
from pathlib import Path

from fuzz_reference import HF, Tally, rtok_binary, rtok_parser, selected

PIECES = [
    "Hello", "", " ", "\n", "\n\n", "  lead", "trail  ", "{{ x }}", "{% if %}", "<|im_end|>",
    "<|eot_id|>", "[INST]", "</s>", "<end_of_turn>", "\u4e2d\u6587", "e\u0301", "\U0001F600",
    "\t", "\\n", "'quote'", '"dq"', "a" * 50, "<think>x</think>", "<think>\n\n</think>\n\n",
    "\r\n", "\u2028", "&amp;", "null", "True",
]

TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather \u00e9 \"now\"",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City"},
                "n": {"type": "integer", "enum": [1, 2]},
            },
            "required": ["city"],
        },
    },
}]


def text(r):
    return "".join(r.choice(PIECES) for _ in range(r.choice([0, 1, 2, 3, 6])))


def conversation(r):
    msgs = []
    if r.random() < 0.4:
        msgs.append({"role": "system", "content": text(r)})
    turns = r.choice([1, 2, 3, 4, 5])
    for i in range(turns):
        msgs.append({"role": "user", "content": text(r)})
        if r.random() < 0.3:
            args = r.choice([{"a": 1, "b": "x\u00e9"}, "{\"q\": \"s\"}", {},
                             {"nested": {"k": [1, 2.5, None, True]}}])
            msgs.append({
                "role": "assistant",
                "content": r.choice(["", None, text(r)]),
                "tool_calls": [{"id": f"call_{i}", "type": "function",
                                "function": {"name": r.choice(["get_weather", "f"]),
                                             "arguments": args}}],
            })
            msgs.append({"role": "tool", "tool_call_id": f"call_{i}", "name": "get_weather",
                         "content": text(r)})
            msgs.append({"role": "user", "content": text(r)})
        if i < turns - 1 or r.random() < 0.3:
            m = {"role": "assistant", "content": text(r)}
            if r.random() < 0.2:
                m["reasoning_content"] = text(r)
            msgs.append(m)
    return msgs


def request(r):
    msgs = conversation(r)
    last = msgs[-1]
    cont = (last["role"] == "assistant" and isinstance(last.get("content"), str)
            and last["content"].strip() != "" and r.random() < 0.5)
    kwargs = {"date_string": "26 Jul 2024"}
    if r.random() < 0.3:
        kwargs["enable_thinking"] = r.random() < 0.5
    return {
        "messages": msgs,
        "add_generation_prompt": (not cont) and r.random() < 0.5,
        "continue_final_message": cont,
        "tools": TOOLS if r.random() < 0.4 else None,
        "documents": ([{"title": "T\u00e9", "text": text(r)}, {"title": "x", "text": "y"}]
                      if r.random() < 0.3 else None),
        "kwargs": kwargs,
    }


def reference(tok, req, encode):
    try:
        out = tok.apply_chat_template(
            req["messages"], tools=req["tools"], documents=req["documents"], tokenize=encode,
            add_generation_prompt=req["add_generation_prompt"],
            continue_final_message=req["continue_final_message"], **req["kwargs"])
    except Exception:  # noqa: BLE001 - a refusal is compared as a refusal
        return None
    if encode:
        ids = out["input_ids"] if not isinstance(out, list) else out
        return " ".join(map(str, ids))
    return out


def crate(rtok, name, req, env, encode):
    args = [rtok, "chat", "-t", name, "--messages", "-", "--kwargs", json.dumps(req["kwargs"])]
    if encode:
        args += ["--encode", "--special-tokens", "parse"]
    if req["add_generation_prompt"]:
        args.append("--add-generation-prompt")
    if req["continue_final_message"]:
        args.append("--continue-final-message")
    if req["tools"]:
        args += ["--tools", json.dumps(req["tools"])]
    if req["documents"]:
        args += ["--documents", json.dumps(req["documents"])]
    p = subprocess.run(args, input=json.dumps(req["messages"]).encode(), capture_output=True,
                       env=env)
    if p.returncode != 0:
        return None, p.stderr.decode()[:200]
    out = p.stdout.decode("utf-8")
    return (" ".join(out.split()) if encode else out), ""


def main():
    ap = rtok_parser(__doc__, 50)
    ap.add_argument("--encode", action="store_true", help="compare ids, not the rendered text")
    args = ap.parse_args()
    hf_home = str(Path(args.shared) / "hf-cache")
    env = dict(os.environ, HF_HOME=hf_home, HF_HUB_OFFLINE="1")
    os.environ.update(HF_HOME=hf_home, HF_HUB_OFFLINE="1")
    from transformers import PreTrainedTokenizerFast

    rtok = rtok_binary()
    tally = Tally()
    for name in selected(HF, args.only):
        tok = PreTrainedTokenizerFast.from_pretrained(name)
        r = random.Random(args.seed)
        refused = 0
        for k in range(args.count):
            req = request(r)
            want = reference(tok, req, args.encode)
            got, err = crate(rtok, name, req, env, args.encode)
            refused += want is None and got is None
            tally.check(want == got, lambda: [
                f"DIFF {name} #{k}: {json.dumps(req)[:400]}",
                "  transformers: " + ("refused" if want is None else repr(want)[:400]),
                "  rtok:         " + (("refused: " + err) if got is None else repr(got)[:400]),
            ])
        tally.report(name, args.count, f" ({refused} refused by both)")
    tally.finish()


if __name__ == "__main__":
    main()
