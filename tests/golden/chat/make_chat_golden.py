#!/usr/bin/env python3
"""Writes tests/golden/chat/expected.json: what transformers' apply_chat_template renders.

For every model in conversations.json and every case that applies to it, this runs
`tokenizer.apply_chat_template(messages, tools=..., documents=..., chat_template=<name>,
add_generation_prompt=..., continue_final_message=..., tokenize=False, **kwargs)` and records
the exact string, or the exception transformers raised. It also renders the Jinja "snippets"
(small templates exercising Jinja2 semantics) with transformers' compiled environment, and
records the error transformers gives for the models that have no chat template.

`strftime_now` is pinned to conversations.json's `fixed_now` by replacing the `datetime` that
transformers' `strftime_now` calls, so the output does not depend on the day it runs.

Usage (offline, from the repository root; see README.md for the pinned versions):

    pip install "transformers==5.23.0" "jinja2==3.1.6"
    python3 tests/golden/chat/make_chat_golden.py           # writes expected.json
    python3 tests/golden/chat/make_chat_golden.py --bench   # times the bench conversations

`--bench` measures transformers' render time (`apply_chat_template(..., tokenize=False)`, the
template already compiled and cached by transformers) for the `bench_4` and `bench_20_tools`
cases that `benches/chat_template.rs` renders, with timeit after a warm-up, and writes nothing.

The shared data is found through RTOK_SHARED_DIR (default: ../shared next to the repository).
"""

import datetime as _dt
import json
import os
import statistics
import sys
import timeit
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
SHARED = Path(os.environ.get("RTOK_SHARED_DIR", REPO.parent / "shared")).resolve()
HF_HOME = SHARED / "hf-cache"
if not (HF_HOME / "hub").is_dir():
    sys.exit(f"error: no Hugging Face cache at {HF_HOME}; set RTOK_SHARED_DIR to the shared data directory")
os.environ["HF_HOME"] = str(HF_HOME)
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import jinja2  # noqa: E402
import transformers  # noqa: E402
import transformers.utils.chat_template_utils as ctu  # noqa: E402
from transformers import AutoTokenizer, PreTrainedConfig  # noqa: E402

CONVERSATIONS = json.loads((HERE / "conversations.json").read_text(encoding="utf-8"))
FIXED_NOW = _dt.datetime.fromisoformat(CONVERSATIONS["fixed_now"])


class _FixedDatetime(_dt.datetime):
    """`datetime` whose now() is conversations.json's fixed_now (transformers' strftime_now
    looks the name up in its module at call time)."""

    @classmethod
    def now(cls, tz=None):
        return FIXED_NOW


ctu.datetime = _FixedDatetime


def load_tokenizer(model_id):
    # transformers 5 reads config.json to pick the tokenizer class; the shared cache holds only
    # tokenizer files, so an empty config makes it use tokenizer_config.json's tokenizer_class.
    return AutoTokenizer.from_pretrained(model_id, config=PreTrainedConfig())


def snapshot_commit(model_id):
    ref = HF_HOME / "hub" / f"models--{model_id.replace('/', '--')}" / "refs" / "main"
    return ref.read_text().strip() if ref.is_file() else None


def error_record(exc):
    return {"error": str(exc), "type": type(exc).__name__}


def render_case(tokenizer, case):
    kwargs = dict(case.get("kwargs") or {})
    try:
        text = tokenizer.apply_chat_template(
            case["messages"],
            tools=case.get("tools"),
            documents=case.get("documents"),
            chat_template=case.get("chat_template_name"),
            add_generation_prompt=case.get("add_generation_prompt", False),
            continue_final_message=case.get("continue_final_message", False),
            tokenize=False,
            **kwargs,
        )
    except Exception as exc:  # every exception is a golden: Rust must fail there too
        return error_record(exc)
    return {"text": text}


def render_snippet(template, variables):
    try:
        compiled = ctu._compile_jinja_template(template)
        text = compiled.render(
            messages=[{"role": "user", "content": "hi"}],
            tools=None,
            documents=None,
            add_generation_prompt=False,
            **variables,
        )
    except Exception as exc:
        return error_record(exc)
    return {"text": text}


def main():
    results = {}
    for model_id in CONVERSATIONS["models"]:
        tokenizer = load_tokenizer(model_id)
        per_case = {}
        for case in CONVERSATIONS["cases"]:
            applies = case.get("models")
            if applies is not None and model_id not in applies:
                continue
            per_case[case["id"]] = render_case(tokenizer, case)
        results[model_id] = per_case
        n_err = sum(1 for r in per_case.values() if "error" in r)
        print(f"{model_id}: {len(per_case)} cases, {n_err} errors", file=sys.stderr)

    no_template = {}
    for model_id in CONVERSATIONS["models_without_template"]:
        tokenizer = load_tokenizer(model_id)
        no_template[model_id] = render_case(tokenizer, CONVERSATIONS["cases"][0])

    snippets = {
        s["id"]: render_snippet(s["template"], CONVERSATIONS["snippet_vars"])
        for s in CONVERSATIONS["snippets"]
    }

    # Documented divergences of the Rust renderer (README.md), recorded for reference only.
    known_differences = {
        t: render_snippet(t, CONVERSATIONS["snippet_vars"])
        for t in CONVERSATIONS.get("snippet_known_differences", [])
    }

    out = {
        "generator": "tests/golden/chat/make_chat_golden.py",
        "transformers_version": transformers.__version__,
        "jinja2_version": jinja2.__version__,
        "python_version": sys.version.split()[0],
        "fixed_now": CONVERSATIONS["fixed_now"],
        "snapshots": {
            m: snapshot_commit(m)
            for m in CONVERSATIONS["models"] + CONVERSATIONS["models_without_template"]
        },
        "results": results,
        "models_without_template": no_template,
        "snippets": snippets,
        "snippet_known_differences": known_differences,
    }
    (HERE / "expected.json").write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {HERE / 'expected.json'}", file=sys.stderr)


BENCH_MODELS = [
    "meta-llama/Llama-3.2-1B-Instruct",
    "Qwen/Qwen3-8B",
    "openai/gpt-oss-20b",
    "meta-llama/Meta-Llama-3-8B-Instruct",
]


def bench():
    cases = {c["id"]: c for c in CONVERSATIONS["cases"]}
    print(f"transformers {transformers.__version__}, jinja2 {jinja2.__version__}, Python {sys.version.split()[0]}")
    print(f"{'model':40} {'case':16} {'p50 us':>9} {'min us':>9}")
    for model_id in BENCH_MODELS:
        tokenizer = load_tokenizer(model_id)
        for case_id in ("bench_4", "bench_20_tools"):
            case = cases[case_id]

            def run():
                return tokenizer.apply_chat_template(
                    case["messages"],
                    tools=case.get("tools"),
                    add_generation_prompt=case.get("add_generation_prompt", False),
                    tokenize=False,
                )

            for _ in range(200):  # warm-up (compiles and caches the template)
                run()
            number = 200
            samples = [t / number * 1e6 for t in timeit.repeat(run, number=number, repeat=25)]
            print(f"{model_id:40} {case_id:16} {statistics.median(samples):9.1f} {min(samples):9.1f}")


if __name__ == "__main__":
    if "--bench" in sys.argv[1:]:
        bench()
    else:
        main()
