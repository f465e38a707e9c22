#!/usr/bin/env python3
"""Writes tests/golden/chat/public/expected.json: transformers' renders of public chat templates.

For every template of manifest.json (public templates with their source repository, path and
commit) and every conversation of conversations.json (the conversations of transformers', vLLM's,
llama.cpp/minja's and huggingface.js' chat-template tests), this calls transformers'
`render_jinja_template` -- what `apply_chat_template(..., tokenize=False)` calls, after dropping
the `None`-valued keys of every message as it does -- with the template's special tokens, and records the exact string or the exception transformers raised.
`strftime_now` is pinned to conversations.json's `fixed_now`.

Usage (offline, from the repository root):

    pip install "transformers==5.23.0" "jinja2==3.1.6"
    python3 tests/golden/chat/public/make_public_golden.py
    cargo test --test it chat_public_golden::
"""

import datetime as _dt
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import jinja2  # noqa: E402
import transformers  # noqa: E402
import transformers.utils.chat_template_utils as ctu  # noqa: E402

HERE = Path(__file__).resolve().parent
CONV = json.loads((HERE / "conversations.json").read_text(encoding="utf-8"))
MANIFEST = json.loads((HERE / "manifest.json").read_text(encoding="utf-8"))
FIXED_NOW = _dt.datetime.fromisoformat(CONV["fixed_now"])


class _FixedDatetime(_dt.datetime):
    @classmethod
    def now(cls, tz=None):
        return FIXED_NOW


ctu.datetime = _FixedDatetime


def render(template, entry, case):
    specials = {
        "bos_token": entry.get("bos_token", CONV["bos_token"]),
        "eos_token": entry.get("eos_token", CONV["eos_token"]),
    }
    kwargs = {**specials, **(case.get("kwargs") or {})}
    try:
        if case.get("continue_final_message") and case.get("add_generation_prompt"):
            raise ValueError("continue_final_message and add_generation_prompt are not compatible.")
        # apply_chat_template drops the None-valued keys of every message before rendering.
        messages = [{k: v for k, v in m.items() if v is not None} for m in case["messages"]]
        text, _ = ctu.render_jinja_template(
            conversations=[messages],
            tools=case.get("tools"),
            documents=case.get("documents"),
            chat_template=template,
            add_generation_prompt=case.get("add_generation_prompt", False),
            continue_final_message=case.get("continue_final_message", False),
            **kwargs,
        )
        return {"text": text[0]}
    except Exception as exc:  # every exception is a golden: Rust must fail there too
        return {"error": str(exc)[:300], "type": type(exc).__name__}


def main():
    results = {}
    for entry in MANIFEST["templates"]:
        template = (HERE / entry["file"]).read_text(encoding="utf-8")
        results[entry["name"]] = {c["id"]: render(template, entry, c) for c in CONV["cases"]}
    out = {
        "generator": "tests/golden/chat/public/make_public_golden.py",
        "transformers_version": transformers.__version__,
        "jinja2_version": jinja2.__version__,
        "python_version": sys.version.split()[0],
        "results": results,
    }
    (HERE / "expected.json").write_text(json.dumps(out, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    n = sum(len(r) for r in results.values())
    errors = sum(1 for r in results.values() for x in r.values() if "error" in x)
    print(f"{len(results)} templates, {n} cases, {errors} raise", file=sys.stderr)


if __name__ == "__main__":
    main()
