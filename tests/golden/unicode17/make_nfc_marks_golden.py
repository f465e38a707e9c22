#!/usr/bin/env python3
"""Write tests/golden/unicode17/nfc_marks.json: Python `tokenizers` ids, for
the two shared models whose only normalizer is NFC (Qwen3, Command-R), of
texts holding combining marks assigned after Unicode 9.0. The reference
composes with `unicode-normalization-alignments` 0.1.12 (Unicode 9.0
tables), where such a mark has class 0 and never moves; Unicode 17 gives it
its class and reorders it (DESIGN.md invariant `unicode-classes-are-reference`).

    pip install tokenizers==0.23.3
    python3 tests/golden/unicode17/make_nfc_marks_golden.py [--shared ../shared]

Probes put each mark the reference does not reorder after a letter and
before a lower-class mark, before a virama and after a composing acute;
`random` texts (seeded) join bases and runs of marks old and new; `long` is
prose with a mark run every 89 chars, for the chunked paths. `variants`
holds the same texts' ids under Qwen3's `tokenizer.json` with its normalizer
replaced by other Unicode-version-dependent chains (NFD, NFKC, NFKD,
sequences with them, `BertNormalizer`), which the reference also runs with
Unicode 9.0 tables (its categories from `unicode_categories` 0.1.1).
"""

import json
import pathlib
import random
import tempfile
import sys
import unicodedata

import tokenizers
from tokenizers import normalizers

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from reference_golden import prose, shared_from_args, write_golden  # noqa: E402

MODELS = ["Qwen/Qwen3-8B", "CohereForAI/c4ai-command-r-plus"]
VARIANTS = {
    "nfd": {"type": "NFD"},
    "nfkc": {"type": "NFKC"},
    "nfkd": {"type": "NFKD"},
    "nfkc_lowercase": {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]},
    "nfd_strip_accents": {"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "StripAccents"}]},
    "nfc_replace": {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Replace", "pattern": {"String": " "}, "content": "_"}]},
    "bert": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None, "lowercase": True},
    "bert_cased_strip": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": True, "lowercase": False},
}
# Marks newer than this script's Python knows (Unicode 15-17), by range.
LATER = list(range(0x1AC1, 0x1B00)) + list(range(0x10EFD, 0x10F00)) + list(range(0x1E4EC, 0x1E4F0)) + [0x1E2AE, 0x1E2EC, 0x1E2EF]


def marks():
    nfc = normalizers.NFC()
    known = [chr(c) for c in range(0x300, 0x20000)
             if not 0xD800 <= c <= 0xDFFF and unicodedata.combining(chr(c)) > 1]
    unmoved = [m for m in known if nfc.normalize_str("a" + m + "\u0334") == "a" + m + "\u0334"]
    return unmoved + [chr(c) for c in LATER]


def main():
    here = pathlib.Path(__file__).resolve().parent
    shared = shared_from_args(here)
    new = marks()
    texts = []
    for m in new:
        texts += [f"a{m}\u0334", f"\u0915{m}\u094d", f"a\u0301{m}", f"e{m}\u0301 x"]
    rng = random.Random(373)
    pool = new + ["\u0301", "\u0316", "\u0334", "\u094d", "\u093c", "\u05b0", "\u0651", "\u3099"]
    bases = list("aeoAEZk ") + ["\u0915", "\u0627", "\u05d0", "\u304b", "\uac00", "\u1100", "\u212b"]
    for _ in range(200):
        texts.append("".join(rng.choice(bases) + "".join(rng.choice(pool) for _ in range(rng.randrange(0, 5)))
                             for _ in range(rng.randrange(1, 12))))
    base = prose(shared, 20000, 28000)
    long = "".join(ch + ((new[i // 89 % len(new)] + "\u0334") if i % 89 == 88 else "") for i, ch in enumerate(base))
    path = here / "nfc_marks.json"
    write_golden(path, shared, MODELS, texts, long)
    doc = json.loads(path.read_text())
    snap = shared / "hf-cache/hub/models--Qwen--Qwen3-8B"
    commit = (snap / "refs/main").read_text().strip()
    base = json.loads((snap / "snapshots" / commit / "tokenizer.json").read_text(encoding="utf-8"))
    doc["variants"] = {}
    for name, normalizer in VARIANTS.items():
        base["normalizer"] = normalizer
        with tempfile.NamedTemporaryFile("w", suffix=".json", encoding="utf-8") as f:
            json.dump(base, f)
            f.flush()
            tok = tokenizers.Tokenizer.from_file(f.name)
        enc = lambda t: tok.encode(t, add_special_tokens=False).ids
        doc["variants"][name] = {"normalizer": normalizer, "texts": [enc(t) for t in texts], "long": enc(long)}
    path.write_text(json.dumps(doc, ensure_ascii=True, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
