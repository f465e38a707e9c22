#!/usr/bin/env python3
"""Goldens for long whitespace runs under the tiktoken patterns (issue 11, item 8).

Python tiktoken itself fails from about 1,000,000 consecutive whitespace chars
("Max stack size exceeded for backtracking", the same fancy-regex limit), so
the reference for those texts is tiktoken's own definition computed without
that limit: the pattern's pieces from the `regex` module (tiktoken's own
dependency; its matcher has no stack limit) and tiktoken's byte-pair merge of
each piece (`_core_bpe.encode_single_piece`). For every text short enough for
`Encoding.encode` to succeed, the script checks that this reference equals
`Encoding.encode`, so the two agree wherever tiktoken answers at all.

Texts are written as recipes (a list of [string, repeat] parts), so the
golden file stays small. Run from the repository root:

    pip install tiktoken
    RTOK_SHARED_DIR=/work/shared python3 tests/golden/tiktoken_whitespace/make_goldens.py
"""
import hashlib
import json
import os
import struct
import sys

import regex
import tiktoken
import tiktoken_ext.openai_public as public
from tiktoken.load import load_tiktoken_bpe

SHARED = os.environ.get("RTOK_SHARED_DIR", "../shared")
HERE = os.path.dirname(os.path.abspath(__file__))

LLAMA3_PAT = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""


def encoding(name):
    if name == "llama3":
        ranks = load_tiktoken_bpe(os.path.join(SHARED, "fixtures/tiktoken/llama3-tokenizer.model"))
        return tiktoken.Encoding("llama3", pat_str=LLAMA3_PAT, mergeable_ranks=ranks, special_tokens={})
    pat = getattr(public, name)
    # The constructors download; take only the pattern and load ranks locally.
    import inspect
    src = inspect.getsource(pat)
    ranks = load_tiktoken_bpe(os.path.join(SHARED, f"fixtures/tiktoken/{name}.tiktoken"))
    ns = {"load_tiktoken_bpe": lambda *a, **k: ranks, "ENDOFTEXT": "<|endoftext|>",
          "FIM_PREFIX": "<|fim_prefix|>", "FIM_MIDDLE": "<|fim_middle|>",
          "FIM_SUFFIX": "<|fim_suffix|>", "ENDOFPROMPT": "<|endofprompt|>"}
    ns.update({k: v for k, v in vars(public).items() if not k.startswith("__") and k not in ns})
    exec(src, ns)
    spec = ns[name]()
    return tiktoken.Encoding(name, pat_str=spec["pat_str"], mergeable_ranks=ranks, special_tokens={})


def reference(enc, text):
    pat = regex.compile(enc._pat_str)
    ids = []
    core = enc._core_bpe
    for m in pat.finditer(text):
        piece = m.group().encode("utf-8")
        ids.extend(core.encode_single_piece(piece))
    return ids


CASES = {
    "spaces-1000500-then-a": [[" ", 1_000_500], ["a", 1]],
    "tabs-1000500-then-words": [["\t", 1_000_500], ["x y", 1]],
    "words-spaces-newlines": [["hello", 1], [" ", 1_200_000], ["world\n\n", 1], ["\n", 1_100_000], ["  end", 1]],
    "mixed-runs": [["word ", 1], [" ", 300_000], ["\t\n", 10], [" ", 700_001], ["x", 1], [" ", 1_000_003], ["!", 1]],
    "spaces-to-end": [["a", 1], [" ", 1_300_000]],
    "ideographic-spaces": [["\u3000", 1_000_100], ["\u4e2d", 1]],
    "space-newline-pairs": [["x", 1], [" \n", 600_000], ["y", 1]],
    "short-runs": [["a  \n\n  b", 1], [" ", 5000], ["c\t\t", 3], ["\r\n", 2000], ["'s  1", 1], [" ", 4097], [".", 1]],
}


def text_of(recipe):
    return "".join(s * n for s, n in recipe)


def main():
    out = {"encodings": {}, "cases": CASES}
    for name in ["o200k_base", "llama3", "cl100k_base", "r50k_base"]:
        enc = encoding(name)
        results = {}
        for case, recipe in CASES.items():
            text = text_of(recipe)
            ids = reference(enc, text)
            if len(text) < 900_000 or case == "short-runs":
                assert enc.encode(text) == ids, (name, case)
            else:
                try:
                    direct = enc.encode(text)
                    assert direct == ids, (name, case)
                except ValueError as e:  # tiktoken's own stack limit
                    assert "stack" in str(e).lower(), e
            packed = b"".join(struct.pack("<I", i) for i in ids)
            results[case] = {
                "count": len(ids),
                "sha256": hashlib.sha256(packed).hexdigest(),
                "head": ids[:8],
                "tail": ids[-8:],
            }
            print(name, case, len(ids), file=sys.stderr)
        out["encodings"][name] = results
    with open(os.path.join(HERE, "goldens.json"), "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=True)
        f.write("\n")


if __name__ == "__main__":
    main()
