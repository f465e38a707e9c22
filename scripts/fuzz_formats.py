#!/usr/bin/env python3
"""Differential fuzz of `rtok chat --format mistral|harmony --encode` against
mistral_common's `encode_chat_completion` (every shared Mistral tokenizer
file) and openai-harmony's `render_conversation_for_completion` (gpt-oss:
`openai/gpt-oss-20b` and the embedded `o200k_harmony`), id for id.

    pip install mistral-common==1.13.1 openai-harmony==0.0.8
    cargo build --release --bin rtok
    TIKTOKEN_ENCODINGS_BASE=../shared/fixtures/tiktoken \\
    python3 scripts/fuzz_formats.py [--shared ../shared] [--seed 1] [--count 200] \\
        [--only NAME,...] [--format mistral|harmony|all] [--rtok PATH] [--minimise]

Random OpenAI-style requests: a system or developer prompt (text or content
parts) or none, one to five turns, assistant turns with one to three
(parallel) tool calls whose arguments are a JSON string, an object or not
JSON, tool results as JSON and as plain text (in the calls' order or not,
by id or by name), reasoning (`reasoning_content`, `reasoning`,
`thinking`), a final assistant message to continue; tools from the golden
scripts and random schemas (nested objects, arrays of objects, nullable
types, `anyOf`/`oneOf`, enums, defaults, no parameters); contents that
join unicode (CJK, RTL, emoji, combining marks, U+2028), whitespace and
both families' control-token look-alikes (`[INST]`, `</s>`,
`[TOOL_CALLS]`, `<|start|>`, `<|channel|>`, `<|reserved_200000|>`, ...).
A few requests break the rules on purpose (bad call ids, orphan tool
results, a late system prompt, an empty assistant turn, unknown names).
Mistral requests carry only the fields mistral_common knows (plus
`reasoning_content`, which vLLM drops) unless `--unknown-fields`: then
`reasoning`/`thinking` and `name` on user messages too, which
mistral_common refuses (pydantic `extra="forbid"`) and rtok ignores.

Each request is mapped to the library's objects by the golden scripts' own
mapping (`tests/golden/mistral_common/make_golden.py`'s `to_mistral`,
`tests/golden/harmony/generate.py`'s `to_harmony`, imported, not copied)
and given to `rtok chat` as the same OpenAI-style JSON. The ids must be
equal, or both sides refuse; a request mistral_common refuses must be
refused by rtok. Prints a tally per file, the first differences (with
`--minimise`, each shrunk to a smallest request that still differs) and
exits 1 if there was any.
"""

import copy
import json
import os
import random
import subprocess
import sys
from pathlib import Path

from fuzz_reference import ROOT, Tally, rtok_binary, rtok_parser

sys.path.insert(0, str(ROOT / "tests/golden/mistral_common"))
sys.path.insert(0, str(ROOT / "tests/golden/harmony"))

NOW = "2025-06-28T09:30:00"
# `--unknown-fields`: Mistral requests carry fields mistral_common does not know too.
UNKNOWN_FIELDS = False
HARMONY = ["openai/gpt-oss-20b", "o200k_harmony"]

# ---------------------------------------------------------------- contents

PIECES = [
    "Hello", "What is the weather?", " ", "  ", "\n", "\n\n", "\t", "  lead", "trail  ", "\r\n",
    "\u2028", "\u00a0", "\u4e2d\u6587\u306e\u30c6\u30ad\u30b9\u30c8", "\u0645\u0631\u062d\u0628\u0627",
    "\u05e9\u05dc\u05d5\u05dd", "e\u0301", "\u00e9t\u00e9", "\U0001F600", "\U0001F44D\U0001F3FD",
    "\U0001F468\u200d\U0001F469\u200d\U0001F467", "\u2581", "\u2581\u2581x", "\ufeff", "\ufffd",
    "'quote'", '"dq"', "\\n", "\\", "{}", "[]", '{"a": 1}', "[1, 2]", "null", "true", "1e20",
    "a" * 40, "0123456789",
    # Mistral control-token look-alikes.
    "[INST]", "[/INST]", "<s>", "</s>", "<unk>", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CONTENT]", "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]", "[THINK]", "[/THINK]", "[IMG]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]",
    "<0x0A>", "<pad>",
    # Harmony control-token look-alikes.
    "<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|call|>", "<|return|>",
    "<|constrain|>", "<|endoftext|>", "<|startoftext|>", "<|reserved_200000|>",
    "<|start|>assistant<|channel|>final<|message|>", "functions.get_weather", "analysis",
    "commentary", "# Tools", "namespace functions {", "// comment",
]


def text(r, empty=True):
    n = r.choice([0, 1, 1, 2, 3, 5, 8] if empty else [1, 1, 2, 3, 5, 8])
    return "".join(r.choice(PIECES) for _ in range(n))


def nonempty(r):
    t = text(r, empty=False)
    return t if t.strip() else t + "x"


def content(r, allow_parts=True):
    if allow_parts and r.random() < 0.1:
        return [{"type": "text", "text": nonempty(r)} for _ in range(r.randint(1, 3))]
    return nonempty(r) if r.random() < 0.93 else text(r)


# ---------------------------------------------------------------- tools

NAMES = ["get_weather", "search", "lookup_v2", "create-event", "f", "traduire", "ping",
         "x" * 30, "Tool_Name_9"]
PROPS = ["city", "query", "limit", "unit", "when", "tags", "items", "price", "note", "n",
         "r\u00e9sum\u00e9", "a b", "nested", "ok", "a-b", "$x", "type", "default", "1st",
         "\u65e5\u4ed8"]


def schema(r, depth=0):
    k = r.randrange(10 if depth < 2 else 6)
    s = {}
    if k == 0:
        s["type"] = "string"
        if r.random() < 0.3:
            s["enum"] = r.sample(["celsius", "fahrenheit", "\u65e5\u672c\u8a9e", "a\"b", ""], 2)
    elif k == 1:
        s["type"] = r.choice(["integer", "number"])
        if r.random() < 0.3:
            s["minimum"] = 0
        if r.random() < 0.3:
            s["default"] = r.choice([0, 10, 0.5, -3])
    elif k == 2:
        s["type"] = "boolean"
        if r.random() < 0.3:
            s["default"] = r.random() < 0.5
    elif k == 3:
        s["type"] = [r.choice(["string", "number", "integer"]), "null"]
    elif k == 4:
        s["type"] = "string"
        s["nullable"] = True
        if r.random() < 0.4:
            s["enum"] = ["asc", "desc"]
    elif k == 5:
        s = {}
    elif k in (6, 7):
        s["type"] = "object"
        props = {p: schema(r, depth + 1) for p in r.sample(PROPS, r.randint(0, 4))}
        s["properties"] = props
        if props and r.random() < 0.6:
            s["required"] = r.sample(sorted(props), r.randint(1, len(props)))
    elif k == 8:
        s["type"] = "array"
        if r.random() < 0.8:
            s["items"] = schema(r, depth + 1)
    else:
        s[r.choice(["anyOf", "oneOf"])] = [schema(r, depth + 1) for _ in range(r.randint(1, 3))]
    x = r.random()
    if x < 0.04:
        s["enum"] = r.choice([[1, 2, 3], ["a", None], [True, "x y", 0.5], ["\u00e9t\u00e9", "\"q\""]])
    elif x < 0.07:
        s["const"] = r.choice(["fixed", 3, None])
    elif x < 0.12:
        s["default"] = r.choice(["str \"q\"", [1, "a"], {"k": None}, None, 1e20, "", "\u65e5"])
    elif x < 0.15:
        s["format"] = r.choice(["date", "date-time", "email"])
    if r.random() < 0.3:
        s["description"] = r.choice(["City name", "Max price\nin EUR", "Le texte \u00e0 traduire",
                                     "with <|end|> and [INST]", "", "Multi\n\nparagraph\n  indented",
                                     "ends with newline\n", "// looks like a comment", "*/ closes"])
    if r.random() < 0.1:
        s["title"] = "Title"
    if r.random() < 0.05:
        s["examples"] = ["x", 1]
    return s


def random_tool(r):
    f = {"name": r.choice(NAMES)}
    if r.random() < 0.85:
        f["description"] = r.choice(["Gets the weather.", "Search \u00ab docs \u00bb \u2014 \u00e9t\u00e9 \u2600\ufe0f",
                                     "Line one.\nLine two.", "", "desc <|message|> [INST]"])
    x = r.random()
    if x < 0.75:
        f["parameters"] = {"type": "object",
                           "properties": {p: schema(r, 1) for p in r.sample(PROPS, r.randint(0, 4))}}
        if f["parameters"]["properties"] and r.random() < 0.6:
            f["parameters"]["required"] = [next(iter(f["parameters"]["properties"]))]
    elif x < 0.85:
        f["parameters"] = {"type": "object", "properties": {}}
    return {"type": "function", "function": f}


def tool_pool(fmt):
    if fmt == "mistral":
        import make_golden as g
        return [g.WEATHER, g.SEARCH, g.BARE]
    import generate as g
    return [g.WEATHER, g.NO_PARAMS, g.EMPTY_PARAMS, g.NULLABLE, g.NESTED, g.ONE_OF, g.TOP_ONE_OF,
            g.UNICODE_TOOL]


def tools_for(r, fmt):
    if r.random() < 0.45:
        return None
    pool = tool_pool(fmt)
    tools = []
    for _ in range(r.randint(0 if fmt == "harmony" else 1, 3)):
        t = copy.deepcopy(r.choice(pool) if r.random() < 0.5 else random_tool(r))
        if all(t["function"]["name"] != u["function"]["name"] for u in tools):
            tools.append(t)
    return tools


# ---------------------------------------------------------------- conversations

ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def call_id(r, fmt):
    if fmt == "mistral" and r.random() < 0.95:
        return "".join(r.choice(ALNUM) for _ in range(9))
    return r.choice(["c1", "call_0", "".join(r.choice(ALNUM) for _ in range(r.randint(1, 24))),
                     "abc-123", "x y"])


def arguments(r, tool):
    props = list(((tool or {}).get("function", {}).get("parameters") or {}).get("properties", {}))
    obj = {p: r.choice(["Paris", 21, 0.5, None, True, [1, "a"], {"k": "v\u00e9"}, "[INST]"])
           for p in r.sample(props, r.randint(0, len(props)))} if props else {}
    x = r.random()
    if x < 0.55:
        return json.dumps(obj, ensure_ascii=r.random() < 0.5)
    if x < 0.8:
        return obj
    return r.choice(["", "{}", "not json {", "\"just a string\"", "[1, 2]", "{\"city\": \"<|end|>\"}",
                     None])


def result(r):
    x = r.random()
    if x < 0.4:
        return json.dumps(r.choice([{"temp": 21.5, "sky": "clear", "ok": True, "n": None},
                                    {"r\u00e9sum\u00e9": "\u00e9lev\u00e9e", "list": [1.0, 2.5, -3, 1e20]},
                                    [], {"msg": "<|end|>[/TOOL_RESULTS]"}]),
                          ensure_ascii=r.random() < 0.5)
    if x < 0.9:
        return nonempty(r)
    if x < 0.95:
        return [{"type": "text", "text": nonempty(r)}]
    return ""


def reasoning(r, m, fmt):
    # For mistral only `reasoning_content` (vLLM drops it): mistral_common refuses any
    # field it does not know (`thinking`, `name` on a user message, ...), rtok ignores them.
    aliases = ["reasoning", "thinking"] if fmt == "harmony" or UNKNOWN_FIELDS else []
    if r.random() < 0.3:
        m[r.choice(["reasoning_content"] * 4 + aliases)] = r.choice(
            [nonempty(r), "", "Let me think. <|end|>"])


def conversation(r, fmt, tools):
    msgs = []
    x = r.random()
    if x < 0.45:
        role = "developer" if fmt == "harmony" and r.random() < 0.3 else "system"
        msgs.append({"role": role, "content": content(r)})
    names = [t["function"]["name"] for t in tools or []]
    turns = r.choice([1, 1, 2, 3, 5])
    for i in range(turns):
        msgs.append({"role": "user", "content": content(r)})
        if (fmt == "harmony" or UNKNOWN_FIELDS) and r.random() < 0.05:
            msgs[-1]["name"] = "bob"
        if r.random() < 0.08:
            msgs.append({"role": "user", "content": content(r)})
        if (names or r.random() < 0.05) and r.random() < 0.5:
            calls = []
            for _ in range(r.choice([1, 1, 1, 2, 3])):
                name = r.choice(names) if names and r.random() < 0.95 else r.choice(NAMES)
                tool = next((t for t in tools or [] if t["function"]["name"] == name), None)
                c = {"id": call_id(r, fmt), "type": "function",
                     "function": {"name": name, "arguments": arguments(r, tool)}}
                if fmt == "harmony" and r.random() < 0.1:
                    del c["id"]
                if fmt == "harmony" and r.random() < 0.05:
                    c["content_type"] = "<|constrain|>json"
                calls.append(c)
            m = {"role": "assistant", "tool_calls": calls}
            if r.random() < 0.15:
                m["content"] = content(r, allow_parts=False)
            elif r.random() < 0.3:
                m["content"] = None
            reasoning(r, m, fmt)
            msgs.append(m)
            order = list(calls)
            if r.random() < 0.2:
                r.shuffle(order)
            if r.random() < 0.05 and len(order) > 1:
                order.pop()
            for c in order:
                t = {"role": "tool", "content": result(r)}
                if "id" in c and r.random() < 0.95:
                    t["tool_call_id"] = c["id"]
                if r.random() < 0.6 or "tool_call_id" not in t:
                    t["name"] = c["function"]["name"]
                msgs.append(t)
            if r.random() < 0.3:
                continue
        if i < turns - 1 or r.random() < 0.25:
            m = {"role": "assistant", "content": content(r)}
            reasoning(r, m, fmt)
            msgs.append(m)
        if r.random() < 0.03:
            msgs.append({"role": r.choice(["system", "developer"] if fmt == "harmony" else ["system"]),
                         "content": content(r)})
    # Rule breakers.
    if r.random() < 0.04:
        msgs.insert(0, {"role": "assistant", "content": nonempty(r)})
    if r.random() < 0.03:
        msgs.insert(r.randrange(len(msgs) + 1), {"role": "assistant", "content": ""})
    if r.random() < 0.03:
        msgs.append({"role": "tool", "tool_call_id": call_id(r, fmt), "content": "orphan"})
    if r.random() < 0.02:
        msgs = []
    return msgs


def request(r, fmt):
    tools = tools_for(r, fmt)
    req = {"messages": conversation(r, fmt, tools)}
    if tools is not None:
        req["tools"] = tools
    if fmt == "harmony":
        req["now"] = r.choice([NOW, "2024-01-05T23:59:59", "2031-12-31T00:00:00"])
        if r.random() < 0.5:
            req["chat_template_kwargs"] = {"reasoning_effort": r.choice(["low", "medium", "high"])}
    return req


# ---------------------------------------------------------------- the two sides

class Mistral:
    def __init__(self, shared, path):
        from mistral_common.tokens.tokenizers.mistral import MistralTokenizer
        import make_golden
        self.to_mistral = make_golden.to_mistral
        self.tok = MistralTokenizer.from_file(str(shared / path))
        self.source = str(shared / path)

    def reference(self, req):
        try:
            return self.tok.encode_chat_completion(self.to_mistral(req)).tokens, ""
        except Exception as e:  # noqa: BLE001 - a refusal is compared as a refusal
            return None, f"{type(e).__name__}: {str(e)[:200]}"

    def args(self, req):
        return ["--format", "mistral"]

    def same(self, want, got):
        # A refusal by mistral_common must be one by rtok; ids must be equal.
        return want == got


class Harmony:
    def __init__(self, shared, name):
        import generate
        from openai_harmony import Conversation, Role
        self.generate, self.Conversation, self.Role = generate, Conversation, Role
        self.source = name

    def reference(self, req):
        try:
            conv = self.Conversation.from_messages(self.generate.to_harmony(req))
            return list(self.generate.ENC.render_conversation_for_completion(conv, self.Role.ASSISTANT)), ""
        except Exception as e:  # noqa: BLE001
            return None, f"{type(e).__name__}: {str(e)[:200]}"

    def args(self, req):
        a = ["--format", "harmony", "--now", req["now"], "--add-generation-prompt"]
        if req.get("chat_template_kwargs"):
            a += ["--kwargs", json.dumps(req["chat_template_kwargs"])]
        return a

    def same(self, want, got):
        return want == got


def crate(rtok, side, req, env):
    args = [rtok, "chat", "-t", side.source, "--messages", "-", "--encode", "--json"] + side.args(req)
    if req.get("tools") is not None:
        args += ["--tools", json.dumps(req["tools"])]
    p = subprocess.run(args, input=json.dumps(req["messages"]).encode(), capture_output=True, env=env)
    if p.returncode != 0:
        return None, p.stderr.decode(errors="replace").strip()[-300:]
    return json.loads(p.stdout)["ids"], ""


def kind(want, werr, got):
    """What sort of difference: shrinking keeps it."""
    if want is None:
        return "reference refuses: " + werr.split(":")[0]
    return "rtok refuses" if got is None else "ids differ"


def differs(rtok, side, req, env, sort):
    want, werr = side.reference(req)
    got, _ = crate(rtok, side, req, env)
    return not side.same(want, got) and kind(want, werr, got) == sort


# ---------------------------------------------------------------- minimising

def shrinks(req):
    """Smaller variants of `req`, the biggest cuts first."""
    msgs = req["messages"]
    for i in range(len(msgs)):
        yield dict(req, messages=msgs[:i] + msgs[i + 1:])
    if req.get("tools"):
        for i in range(len(req["tools"])):
            yield dict(req, tools=req["tools"][:i] + req["tools"][i + 1:])
        yield {k: v for k, v in req.items() if k != "tools"}
    if req.get("chat_template_kwargs"):
        yield {k: v for k, v in req.items() if k != "chat_template_kwargs"}
    for i, m in enumerate(msgs):
        def put(m2, i=i):
            return dict(req, messages=msgs[:i] + [m2] + msgs[i + 1:])
        for k in list(m):
            if k not in ("role",):
                yield put({a: b for a, b in m.items() if a != k})
        for k, v in m.items():
            if isinstance(v, str) and len(v) > 1:
                yield put(dict(m, **{k: v[: len(v) // 2]}))
                yield put(dict(m, **{k: v[len(v) // 2:]}))
                yield put(dict(m, **{k: "x"}))
            if isinstance(v, list) and k == "content" and v:
                yield put(dict(m, content=" ".join(p.get("text", "") for p in v)))
        calls = m.get("tool_calls") or []
        for j in range(len(calls)):
            yield put(dict(m, tool_calls=calls[:j] + calls[j + 1:]))
            a = calls[j]["function"].get("arguments")
            if a not in ("{}", "", None):
                c = copy.deepcopy(calls[j])
                c["function"]["arguments"] = "{}"
                yield put(dict(m, tool_calls=calls[:j] + [c] + calls[j + 1:]))
    for i, t in enumerate(req.get("tools") or []):
        f = t["function"]
        for k in ("description", "parameters"):
            if k in f:
                t2 = copy.deepcopy(t)
                del t2["function"][k]
                yield dict(req, tools=req["tools"][:i] + [t2] + req["tools"][i + 1:])
        props = (f.get("parameters") or {}).get("properties") or {}
        for p in props:
            t2 = copy.deepcopy(t)
            del t2["function"]["parameters"]["properties"][p]
            req2 = t2["function"]["parameters"].get("required")
            if req2 and p in req2:
                req2.remove(p)
            yield dict(req, tools=req["tools"][:i] + [t2] + req["tools"][i + 1:])


def minimise(rtok, side, req, env, sort, budget=400):
    steps = 0
    progress = True
    while progress and steps < budget:
        progress = False
        for smaller in shrinks(req):
            steps += 1
            if differs(rtok, side, smaller, env, sort):
                req, progress = smaller, True
                break
            if steps >= budget:
                break
    return req


def around(ids, at):
    return ids[max(0, at - 4): at + 8]


def describe(rtok, side, name, k, req, want, werr, got, gerr, env, do_min):
    lines = [f"DIFF {name} #{k}: {json.dumps(req, ensure_ascii=False)[:1500]}"]
    if do_min:
        small = minimise(rtok, side, req, env, kind(want, werr, got))
        want, werr = side.reference(small)
        got, gerr = crate(rtok, side, small, env)
        lines.append(f"  minimised: {json.dumps(small, ensure_ascii=False)}")
    if want is not None and got is not None:
        at = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
        lines.append(f"  first difference at id {at} (reference {len(want)} ids, rtok {len(got)})")
        lines.append(f"  reference: ...{around(want, at)}")
        lines.append(f"  rtok:      ...{around(got, at)}")
    else:
        lines.append("  reference: " + ("refused: " + werr if want is None else f"{len(want)} ids {want[:40]}"))
        lines.append("  rtok:      " + ("refused: " + gerr if got is None else f"{len(got)} ids {got[:40]}"))
    return lines


def main():
    ap = rtok_parser(__doc__, 200)
    ap.add_argument("--format", choices=["mistral", "harmony", "all"], default="all")
    ap.add_argument("--rtok", default=os.environ.get("RTOK_BIN"), help="the rtok binary (default: target/release/rtok)")
    ap.add_argument("--minimise", action="store_true", help="shrink each difference shown")
    ap.add_argument("--unknown-fields", action="store_true",
                    help="for mistral too: `reasoning`/`thinking`, `name` on a user message")
    args = ap.parse_args()
    global UNKNOWN_FIELDS
    UNKNOWN_FIELDS = args.unknown_fields
    shared = Path(args.shared)
    env = dict(os.environ, HF_HOME=str(shared / "hf-cache"), HF_HUB_OFFLINE="1",
               RTOK_SHARED_DIR=str(shared))
    os.environ.setdefault("TIKTOKEN_ENCODINGS_BASE", str(shared / "fixtures/tiktoken"))
    rtok = args.rtok or rtok_binary()
    wanted = set(filter(None, args.only.split(",")))
    targets = []
    if args.format in ("mistral", "all"):
        import make_golden
        targets += [("mistral", f) for f in make_golden.FILES]
    if args.format in ("harmony", "all"):
        targets += [("harmony", n) for n in HARMONY]
    targets = [(f, n) for f, n in targets if not wanted or n in wanted or Path(n).name in wanted]
    tally = Tally()
    for fmt, name in targets:
        side = Mistral(shared, name) if fmt == "mistral" else Harmony(shared, name)
        r = random.Random(f"{args.seed}/{fmt}")
        refused = 0
        for k in range(args.count):
            req = request(r, fmt)
            want, werr = side.reference(req)
            got, gerr = crate(rtok, side, req, env)
            refused += want is None and got is None
            same = side.same(want, got)
            tally.check(same, lambda: describe(rtok, side, name, k, req, want, werr, got, gerr, env,
                                               args.minimise))
        tally.report(f"{fmt} {Path(name).name}", args.count, f" ({refused} refused by both)")
    tally.finish()


if __name__ == "__main__":
    main()
