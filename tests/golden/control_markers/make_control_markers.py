#!/usr/bin/env python3
"""Writes tests/golden/control_markers/expected.json: the control markers of every shared chat
model, and the ids `encode_chat` must give under `ChatSpecialTokens::PlainText` when a request
types those markers (DESIGN.md invariant `typed-markers-stay-text`).

The rule, restated here independently of the Rust code: every `special` added token is a
marker, and so is a non-special added token that the chat template writes literally (when it
holds a char other than letters, digits and whitespace) or that has a marker's shape (`<|…|>`,
`<｜…｜>`, `[UPPER]`, `[/UPPER]`).

The reference for the ids: transformers renders the request (`apply_chat_template(...,
tokenize=False)`); the markers the template wrote are found by rendering once more with each
marker typed in the request replaced, char for char, by private-use sentinels; the rendered
prompt is cut at the template's markers (their ids), and every stretch between them is encoded
by Python `tokenizers` with every marker flagged `special` and `encode_special_tokens = True`
(the reference's `split_special_tokens`): a typed marker is text exactly as a typed special
token is. A request that types no marker must give `encode(render)` unchanged.

Usage (offline, from the repository root):

    pip install "transformers==5.24.0" "tokenizers==0.23.3" "jinja2==3.1.6"
    python3 tests/golden/control_markers/make_control_markers.py

The shared data is found through RTOK_SHARED_DIR (default: ../shared next to the repository).
"""

import json
import os
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
SHARED = Path(os.environ.get("RTOK_SHARED_DIR", REPO.parent / "shared")).resolve()
HF_HOME = SHARED / "hf-cache"
if not (HF_HOME / "hub").is_dir():
    sys.exit(f"error: no Hugging Face cache at {HF_HOME}; set RTOK_SHARED_DIR to the shared data")
os.environ["HF_HOME"] = str(HF_HOME)
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import datetime as _dt  # noqa: E402

import transformers.utils.chat_template_utils as ctu  # noqa: E402
from huggingface_hub import hf_hub_download  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402
from transformers import AutoTokenizer, PreTrainedConfig  # noqa: E402

MODELS = [
    "meta-llama/Meta-Llama-3-8B-Instruct",
    "meta-llama/Llama-3.2-1B-Instruct",
    "mistralai/Mistral-Nemo-Instruct-2407",
    "Qwen/Qwen3-8B",
    "deepseek-ai/DeepSeek-V3",
    "google/gemma-3-4b-it",
    "openai/gpt-oss-20b",
    "CohereForAI/c4ai-command-r-plus",
]
CASES_PER_MODEL = 12
# `strftime_now` is pinned (the Rust test sets the same `fixed_now`).
FIXED_NOW = _dt.datetime.fromisoformat("2024-09-03T12:34:56")


class _FixedDatetime(_dt.datetime):
    @classmethod
    def now(cls, tz=None):
        return FIXED_NOW


ctu.datetime = _FixedDatetime
FILLER = ["Hi", " there", "\n", "Obey", " me", ".", " 42", " élan", " 你好", "  ", "\t", "x"]
SENTINEL_BASE = 0xF0000


def has_marker_shape(t):
    def inner(o, c):
        if t.startswith(o) and t.endswith(c) and len(t) > len(o) + len(c):
            body = t[len(o) : len(t) - len(c)]
            return None if any(ch.isspace() for ch in body) else body
        return None

    if inner("<|", "|>") is not None or inner("<\uff5c", "\uff5c>") is not None:
        return True
    body = inner("[", "]")
    if body is None:
        return False
    body = body[1:] if body.startswith("/") else body
    return (
        body[:1].isascii()
        and body[:1].isupper()
        and all((c.isascii() and (c.isupper() or c.isdigit())) or c == "_" for c in body)
    )


def is_markup(t):
    return any(not c.isalnum() and not c.isspace() for c in t) and not all(
        c.isspace() or c == "\u2581" for c in t
    )


def template_sources(tok):
    t = tok.chat_template
    if isinstance(t, dict):
        return list(t.values())
    return [t] if t else []


def markers_of(doc, tok):
    sources = template_sources(tok)
    out = {}
    for a in doc.get("added_tokens", []):
        c = a["content"]
        if not c:
            continue
        if a.get("special"):
            out[c] = a["id"]
        elif has_marker_shape(c) or (is_markup(c) and any(c in s for s in sources)):
            out[c] = a["id"]
    return out


def leftmost_longest(text, texts):
    """Every leftmost-longest, non-overlapping match of `texts` in `text`: (start, end)."""
    by_first = {}
    for t in texts:
        by_first.setdefault(t[0], []).append(t)
    for v in by_first.values():
        v.sort(key=len, reverse=True)
    i, out = 0, []
    while i < len(text):
        hit = next((t for t in by_first.get(text[i], []) if text.startswith(t, i)), None)
        if hit:
            out.append((i, i + len(hit)))
            i += len(hit)
        else:
            i += 1
    return out


def request_strings(messages):
    return [m["content"] for m in messages]


def protect(messages, marker_texts, alphabet):
    """Each typed marker's chars replaced by sentinels; returns the new messages."""
    out = []
    for m in messages:
        s = m["content"]
        spans = leftmost_longest(s, marker_texts)
        chars = list(s)
        for a, b in spans:
            for k in range(a, b):
                chars[k] = chr(SENTINEL_BASE + alphabet[chars[k]])
        out.append({**m, "content": "".join(chars)})
    return out


def restore(rendered, alphabet_rev):
    text, marked = [], []
    for ch in rendered:
        o = ord(ch) - SENTINEL_BASE
        if 0 <= o < len(alphabet_rev):
            marked.append(len(text))
            text.append(alphabet_rev[o])
        else:
            text.append(ch)
    return "".join(text), set(marked)


def main():
    rng = random.Random(39)
    models = {}
    for model in MODELS:
        path = hf_hub_download(model, "tokenizer.json")
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        tok = AutoTokenizer.from_pretrained(model, config=PreTrainedConfig())
        markers = markers_of(doc, tok)
        marker_texts = sorted(markers)
        alphabet_chars = sorted({c for t in marker_texts for c in t})
        alphabet = {c: i for i, c in enumerate(alphabet_chars)}
        plain_doc = json.loads(json.dumps(doc))
        for a in plain_doc["added_tokens"]:
            if a["content"] in markers:
                a["special"] = True
        plain = Tokenizer.from_str(json.dumps(plain_doc))
        plain.encode_special_tokens = True
        whole = Tokenizer.from_str(json.dumps(doc))
        nonspecial = sorted(
            t for t in marker_texts if not any(a["content"] == t and a.get("special") for a in doc["added_tokens"])
        )
        pool = nonspecial + rng.sample(marker_texts, min(6, len(marker_texts)))
        cases = []
        for k in range(CASES_PER_MODEL):
            def content():
                parts = [rng.choice(FILLER) for _ in range(rng.randint(2, 8))]
                if k > 0:
                    for _ in range(rng.randint(1, 3)):
                        parts.insert(rng.randint(0, len(parts)), rng.choice(pool))
                return "".join(parts)

            messages = [
                {"role": "system", "content": content()},
                {"role": "user", "content": content()},
            ]
            try:
                rendered = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            except Exception:
                messages = messages[1:]
                rendered = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            typed = any(leftmost_longest(s, marker_texts) for s in request_strings(messages))
            if not typed:
                ids = whole.encode(rendered, add_special_tokens=False).ids
                forged = 0
            else:
                protected = protect(messages, marker_texts, alphabet)
                shown = tok.apply_chat_template(protected, tokenize=False, add_generation_prompt=True)
                text, marked = restore(shown, alphabet_chars)
                assert text == rendered, (model, "sentinels changed the render")
                ids, pos, forged = [], 0, 0
                for a, b in leftmost_longest(text, marker_texts):
                    if any(p in marked for p in range(a, b)):
                        forged += 1
                        continue
                    if a > pos:
                        ids += plain.encode(text[pos:a], add_special_tokens=False).ids
                    ids.append(markers[text[a:b]])
                    pos = b
                if pos < len(text):
                    ids += plain.encode(text[pos:], add_special_tokens=False).ids
            cases.append({"messages": messages, "ids": ids, "forged": forged})
        models[model] = {
            "markers": [[markers[t], t] for t in sorted(markers, key=markers.get)],
            "nonspecial_markers": [[markers[t], t] for t in sorted(nonspecial, key=markers.get)],
            "cases": cases,
        }
        print(f"{model}: {len(markers)} markers ({len(nonspecial)} non-special), {len(cases)} cases")
    meta = {"fixed_now": FIXED_NOW.isoformat(), "transformers": __import__("transformers").__version__, "tokenizers": __import__("tokenizers").__version__}
    (HERE / "expected.json").write_text(
        json.dumps({"meta": meta, "models": models}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )


if __name__ == "__main__":
    main()
