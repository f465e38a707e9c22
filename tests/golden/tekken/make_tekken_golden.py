#!/usr/bin/env python3
"""Writes tests/golden/tekken/expected.json: what mistral-common's `Tekkenizer` gives for the
shared `tekken.json` files (fixtures/mistral/) on every corpus and adversarial file.

Per (file, input): the ids of `encode(text, bos=False, eos=False)` (count and sha256 over the
ids packed as little-endian u32) and the sha256 of `decode(ids)` (UTF-8). Besides, short texts
and hand-picked id sequences (special ids between the two halves of a char, byte pieces, fillers)
with their full ids and both decodes (`SpecialTokenPolicy.IGNORE` and `KEEP`), and the first 40
special tokens' texts.

Usage (offline, from the repository root):

    pip install "mistral-common==1.13.1"
    python3 tests/golden/tekken/make_tekken_golden.py

The shared data is found through RTOK_SHARED_DIR (default: ../shared next to the repository);
the adversarial files are made by shared/corpus/make_adversarial.py with its defaults.
"""

import array
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
SHARED = Path(os.environ.get("RTOK_SHARED_DIR", REPO.parent / "shared")).resolve()

import mistral_common  # noqa: E402
from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy  # noqa: E402
from mistral_common.tokens.tokenizers.tekken import Tekkenizer  # noqa: E402

FILES = ["tekken_240718.json", "tekken_240911.json"]
SKIP = {"README.md", "SHA256SUMS", "make_adversarial.py"}
SHORT = [
    "",
    " ",
    "Hello, world!",
    "[INST] hi [/INST]</s><s>",
    "  leading and trailing  \n\n\t",
    "你好，世界。こんにちは",
    "emoji 👩‍👩‍👧‍👦 and é vs é",
    "don't I'LL we've 1234567 3.14159",
    "<SPECIAL_42>[TOOL_CALLS][AVAILABLE_TOOLS]",
    "\r\n\r\nline\rbreaks\u2028and\u0085more",
]


def ids_sha256(ids):
    a = array.array("I", ids)
    if sys.byteorder != "little":
        a.byteswap()
    return hashlib.sha256(a.tobytes()).hexdigest()


def inputs():
    corpus = SHARED / "corpus"
    out = {}
    for p in sorted(corpus.rglob("*")):
        rel = p.relative_to(corpus)
        if p.is_file() and len(rel.parts) >= 2 and rel.name not in SKIP:
            out[rel.as_posix()] = p.read_bytes().decode("utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, str(corpus / "make_adversarial.py"), tmp], check=True,
                       stdout=subprocess.DEVNULL)
        for p in sorted(Path(tmp).glob("*.txt")):
            out[f"adversarial/{p.name}"] = p.read_bytes().decode("utf-8")
    return dict(sorted(out.items()))


def main():
    texts = inputs()
    result = {"meta": {"mistral_common": mistral_common.__version__}, "files": {}}
    for name in FILES:
        tok = Tekkenizer.from_file(SHARED / "fixtures" / "mistral" / name)
        n = tok.num_special_tokens
        # A char's bytes split by a special id, lone bytes, fillers and the last id.
        first_byte = n + 0xE4
        sequences = [
            [n + 0xE4, 3, n + 0xBD, n + 0xA0],
            [n + 0xE4, n + 0xBD, n + 0xA0],
            [1, n + 0xFF, 2, 999, tok.n_words - 1],
            [first_byte, 0, 1, 2, 500],
        ]
        entry = {
            "n_words": tok.n_words,
            "num_special_tokens": n,
            "version": tok.version.value,
            "specials": [tok.id_to_piece(i) for i in range(40)],
            "inputs": {},
            "short": [],
            "sequences": [],
        }
        for key, text in texts.items():
            ids = tok.encode(text, bos=False, eos=False)
            entry["inputs"][key] = {
                "n": len(ids),
                "sha256": ids_sha256(ids),
                "decode_sha256": hashlib.sha256(tok.decode(ids).encode("utf-8")).hexdigest(),
            }
        for text in SHORT:
            entry["short"].append({"text": text, "ids": tok.encode(text, bos=True, eos=False)})
        for ids in sequences:
            entry["sequences"].append({
                "ids": ids,
                "ignore": tok.decode(ids, special_token_policy=SpecialTokenPolicy.IGNORE),
                "keep": tok.decode(ids, special_token_policy=SpecialTokenPolicy.KEEP),
            })
        result["files"][name] = entry
        print(f"{name}: {len(texts)} inputs", file=sys.stderr)
    (HERE / "expected.json").write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n",
                                        encoding="utf-8")


if __name__ == "__main__":
    main()
