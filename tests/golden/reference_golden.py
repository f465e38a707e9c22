"""What the golden scripts that hold Python `tokenizers` ids share: the
shared folder from the command line, a stretch of real prose, and the
golden file itself (`texts`, `long`, and per model the ids of each)."""

import argparse
import json
import pathlib

import tokenizers


def shared_from_args(here):
    """The shared data folder: `--shared`, else `../shared` beside the repository."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=str(here.parents[2].parent / "shared"))
    return pathlib.Path(ap.parse_args().shared)


def prose(shared, start, end):
    """Characters `start..end` of an English novel from the shared corpus."""
    text = (shared / "corpus/en-prose/pride-and-prejudice.txt").read_text(encoding="utf-8")
    return text[start:end]


def write_golden(path, shared, models, texts, long, plain=False):
    """Encode `texts` and `long` with each model's `tokenizer.json` (no
    special tokens added; with `plain`, no padding or truncation either) and
    write the golden to `path`."""
    doc = {"tokenizers": tokenizers.__version__, "texts": texts, "long": long, "models": {}}
    for model in models:
        snap = shared / "hf-cache/hub" / ("models--" + model.replace("/", "--"))
        commit = (snap / "refs/main").read_text().strip()
        tok = tokenizers.Tokenizer.from_file(str(snap / "snapshots" / commit / "tokenizer.json"))
        if plain:
            tok.no_padding()
            tok.no_truncation()
        enc = lambda t: tok.encode(t, add_special_tokens=False).ids
        doc["models"][model] = {"texts": [enc(t) for t in texts], "long": enc(long)}
    path.write_text(json.dumps(doc, ensure_ascii=True, separators=(",", ":")) + "\n")
