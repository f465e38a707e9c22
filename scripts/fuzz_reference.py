#!/usr/bin/env python3
"""Differential fuzz of the crate against the Python references on random
hostile texts: every shared `tokenizer.json` against `tokenizers`, the
tiktoken encodings against `tiktoken` (reading the shared rank files), and
the shared SentencePiece `.model` files against `sentencepiece`.

    pip install tokenizers==0.23.3 tiktoken==0.14.0 sentencepiece==0.2.3
    cargo build --release --features tools --bin encode_jsonl
    python3 scripts/fuzz_reference.py [--shared ../shared] [--seed 1] [--count 2000] \\
        [--only NAME,...] [--cjk | --lines]

Texts join 1 to 80 pieces drawn from an alphabet of the classes the
tokenizers tell apart (whitespace of every kind, contractions, letters of
several scripts and cases, digits of every numeric category, marks, CJK,
emoji and ZWJ sequences, punctuation old and new, symbols, controls) and
random code points of every plane, some repeated. Each text is encoded by
the crate twice, in a fresh process (the first encodes run on what serves
while the load's background builds go on) and after `warm_up`, and the ids
must equal the reference's. Prints the first mismatches of each tokenizer
and exits 1 if there was any. DESIGN.md invariant `unicode-classes-are-reference` has what it found.

`--lines`: long slices of the shared corpus, each followed by copies of
itself, some edited where line cuts would bite (`/`, spaces or U+3000
then a newline after a newline, trailing spaces, CR LF, `<|` and marks),
so one process sees the same lines again and again (its word caches
answer them).
"""

import argparse
import json
import os
import pathlib
import random
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
HF = [
    "meta-llama/Meta-Llama-3-8B-Instruct", "meta-llama/Llama-3.2-1B-Instruct", "Qwen/Qwen3-8B",
    "deepseek-ai/DeepSeek-V3", "openai/gpt-oss-20b", "mistralai/Mistral-7B-v0.1",
    "mistralai/Mistral-Nemo-Instruct-2407", "google/gemma-3-4b-it", "CohereForAI/c4ai-command-r-plus",
    "Xenova/gpt-3.5-turbo", "sentence-transformers/all-MiniLM-L6-v2",
]
TIKTOKEN = ["o200k_base", "cl100k_base"]
SPM = [
    "mistral-tokenizer.model.v1", "mistral_instruct_tokenizer_240323.model.v3",
    "mistral_instruct_tokenizer_241114.model.v7", "spm-test_model.model", "spm-test_ja_model.model",
]
PIECES = [
    " ", "  ", "\t", "\n", "\r\n", "\r", "\u00a0", "\u2009", "\u3000", "\u200b", "\u2028", "\u0085",
    "\x0b", "\x0c", "'s", "'S", "'ll", "'LL", "'\u017f", "'re", "'Ve", "'d", "\u2019s", "'", "\"",
    "a", "Z", "the", "The", "HTTP", "camelCase", "snake_case", "x1", "1x", "0", "12", "123", "1234",
    "12345", "\u0663", "\u0969", "\u2460", "\u00bd", "\u216b", "\u00b2", "\u00e9", "e\u0301",
    "\u00f1", "\u00df", "\u0130", "\u01c5", "\ufb01", "\u02bc", "\u02c6", "\u4e2d", "\u6587\u672c",
    "\u65e5\u672c\u8a9e", "\uff76\uff80\uff76\uff85", "\u30ab\u30bf\u30ab\u30ca",
    "\u3072\u3089\u304c\u306a", "\ud55c\uad6d\uc5b4", "\u3131", "\u0440\u0443\u0441\u0441\u043a\u0438\u0439",
    "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac", "\u05e2\u05d1\u05e8\u05d9\u05ea",
    "\u0627\u0644\u0639\u0631\u0628\u064a\u0629", "\u0939\u093f\u0928\u094d\u0926\u0940",
    "\u0e44\u0e17\u0e22", "\U0001F600", "\U0001F44D\U0001F3FD", "\U0001F468\u200d\U0001F469\u200d\U0001F467",
    "\U0001F1FA\U0001F1F8", "\U0001F980", "\ue000", "\U0010FFFF", "\ufffd", "\ufeff", ".", ",", "!",
    "?", "...", "\u2026", "\u2014", "-", "--", "()", "[]", "{}", "<>", "</", "/>", "==", "=>", "->",
    "::", "//", "/*", "#", "@", "$", "%", "^", "&&", "||", "\\n", "\\", "`", "```", "~", "|", "+",
    "*", "_", "__init__", "0x1F", "3.14", "1e-9", "1,000", "\u0300", "\u0301\u0302", "\u094d",
    "\u200d", "\u034f", "\ufe0f", "\u2e4e", "\u061d", "\U0001145d", "\u166d", "\U00010940",
    "\U00011de0", "\u2126", "\u212a",
]


def texts(seed, count):
    rng = random.Random(seed)
    planes = [(0x20, 0x7E), (0xA0, 0x2FFF), (0x3000, 0x9FFF), (0xA000, 0xD7FF), (0xE000, 0xFFFF),
              (0x10000, 0x1FFFF), (0x20000, 0x323AF), (0x0, 0x1F)]
    out = []
    while len(out) < count:
        parts = []
        for _ in range(rng.choice([1, 2, 3, 5, 8, 13, 30, 80])):
            r = rng.random()
            if r < 0.55:
                parts.append(rng.choice(PIECES))
            elif r < 0.85:
                parts.append(rng.choice(PIECES) * rng.randint(2, 12))
            else:
                parts.append("".join(chr(rng.randint(*rng.choice(planes)))
                                     for _ in range(rng.randint(1, 4))))
        out.append("".join(parts))
    return out


def cjk_texts(seed, count, shared):
    """Texts of long CJK runs (invariant `cut-where-no-entry-joins`'s cuts): chars of the shared Chinese
    corpus, random code points of U+3000..U+9FFF, kana, the Llama-3 entries
    its merges do not rebuild, CJK and ASCII punctuation between them."""
    rng = random.Random(seed)
    pool = sorted({c for p in sorted((shared / "corpus/zh").iterdir())
                   for c in p.read_text(encoding="utf-8")[:200_000] if 0x3000 <= ord(c) <= 0x9FFF})
    words = ["\u4e2d\u6587\u5b57\u5e55", "\u3057\u306a\u3044", "\u30fc\u30ab\u30fc",
             "\u30fc\u30b7\u30e7\u30f3", "\uff0c", "\u3002", "\u300c", "\u300d", " ", "a", "1", "\n"]
    out = []
    while len(out) < count:
        parts = []
        for _ in range(rng.choice([1, 3, 8, 20, 60])):
            r = rng.random()
            if r < 0.7:
                parts.append(rng.choice(pool))
            elif r < 0.8:
                parts.append(chr(rng.randint(0x3000, 0x9FFF)))
            else:
                parts.append(rng.choice(words))
        out.append("".join(parts))
    return out


LINE_EDITS = ["\n", " ", "/", "a", "\u4e2d", "\n\n", " \n", "  \n", "\n/", "\n ", "\u3000",
              "\n\u3000", "\t", "'s", "123", "<|", "\u00e9", "\r\n", "X", "\n\r", "\u2028",
              "\u00a0\n", "e\u0301"]


def line_texts(seed, count, shared):
    """Corpus slices of 5 to 30 KB, each followed by three copies, three
    edited copies and a copy without its first chars (`docs/decisions/memos.md` (entry 357)'s memo)."""
    rng = random.Random(seed)
    base = []
    for cat in sorted(p for p in (shared / "corpus").iterdir() if p.is_dir()):
        raw = b"".join(p.read_bytes() for p in sorted(cat.iterdir()) if p.is_file())
        base.append(raw[:400_000].decode("utf-8", errors="ignore"))
    out = []
    while len(out) < count:
        t = rng.choice(base)
        a = rng.randrange(0, max(1, len(t) - 30_000))
        s = t[a:a + rng.randrange(5_000, 30_000)]
        out.append(s)
        for _ in range(3):
            out.append(s)
            chars = list(s)
            for _ in range(rng.randrange(1, 40)):
                chars[rng.randrange(len(chars))] = rng.choice(LINE_EDITS)
            out.append("".join(chars))
            out.append(s[rng.randrange(0, 100):])
    return out[:count]


def rtok_parser(doc, count):
    """The options `fuzz_chat.py` and `fuzz_decode.py` share with this script."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=os.environ.get("RTOK_SHARED_DIR", str(ROOT.parent / "shared")))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=count)
    ap.add_argument("--only", default="", help="comma-separated names (hub ids, encodings, .model files)")
    return ap


def selected(names, only):
    """`names` in order, only those `--only` lists (all when it lists none)."""
    wanted = set(filter(None, only.split(",")))
    return [n for n in names if not wanted or n in wanted]


def rtok_binary():
    """The `rtok` binary the sibling fuzzers drive."""
    binary = ROOT / "target/release/rtok"
    if not binary.exists():
        sys.exit("build it first: cargo build --release --bin rtok")
    return str(binary)


class Tally:
    """Comparisons and differences, per tokenizer and in all; prints the
    first differences of each tokenizer."""

    SHOWN = 3

    def __init__(self):
        self.total = self.bad = self.differ = 0

    def check(self, same, describe):
        """Counts one comparison; `describe()` gives the lines to print."""
        self.total += 1
        if not same:
            self.differ += 1
            if self.differ <= self.SHOWN:
                print("\n".join(describe()))

    def report(self, name, count, note=""):
        self.bad += self.differ
        print(f"{name}: {self.differ} of {count} differ{note}")
        self.differ = 0

    def finish(self):
        print(f"total {self.total}, differ {self.bad}")
        sys.exit(1 if self.bad else 0)


def snapshot(shared, model):
    d = shared / "hf-cache/hub" / ("models--" + model.replace("/", "--"))
    return d / "snapshots" / (d / "refs/main").read_text().strip() / "tokenizer.json"


def reference(shared, kind, name):
    """The crate's source for `name` and the reference's encode function."""
    if kind == "hf":
        import tokenizers
        tok = tokenizers.Tokenizer.from_file(str(snapshot(shared, name)))
        tok.no_padding()
        tok.no_truncation()
        return name, lambda t: tok.encode(t, add_special_tokens=False).ids
    if kind == "tiktoken":
        import tiktoken
        import tiktoken.load as tl
        import tiktoken_ext.openai_public as op
        path = str(shared / "fixtures/tiktoken" / f"{name}.tiktoken")
        saved = op.load_tiktoken_bpe
        op.load_tiktoken_bpe = lambda url, expected_hash=None: tl.load_tiktoken_bpe(path, expected_hash)
        try:
            enc = tiktoken.Encoding(**op.ENCODING_CONSTRUCTORS[name]())
        finally:
            op.load_tiktoken_bpe = saved
        return name, lambda t: enc.encode(t, disallowed_special=())
    import sentencepiece
    path = str(shared / "fixtures/sentencepiece" / name)
    sp = sentencepiece.SentencePieceProcessor(model_file=path)
    return path, lambda t: sp.encode(t)


def main():
    ap = rtok_parser(__doc__, 2000)
    ap.add_argument("--cjk", action="store_true", help="texts of long CJK runs instead")
    ap.add_argument("--lines", action="store_true",
                    help="corpus slices seen again and edited instead")
    args = ap.parse_args()
    shared = pathlib.Path(args.shared)
    binary = ROOT / "target/release/encode_jsonl"
    if not binary.exists():
        sys.exit("build it first: cargo build --release --features tools --bin encode_jsonl")
    cases = (
        [("hf", n) for n in selected(HF, args.only)]
        + [("tiktoken", n) for n in selected(TIKTOKEN, args.only)]
        + [("spm", n) for n in selected(SPM, args.only)]
    )
    if args.lines:
        sample = line_texts(args.seed, args.count, shared)
    elif args.cjk:
        sample = cjk_texts(args.seed, args.count, shared)
    else:
        sample = texts(args.seed, args.count)
    env = dict(os.environ, RTOK_SHARED_DIR=str(shared))
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "texts.jsonl"
        path.write_text("".join(json.dumps(t) + "\n" for t in sample))
        for kind, name in cases:
            source, encode = reference(shared, kind, name)
            want = [encode(t) for t in sample]
            for mode in ["cold", "warm"]:
                run = subprocess.run([str(binary), source, str(path), mode], env=env,
                                     capture_output=True, text=True)
                got = [json.loads(line) for line in run.stdout.splitlines()]
                if run.returncode != 0 or len(got) != len(sample):
                    print(f"{name} {mode}: the crate failed: {run.stderr[-400:]}")
                    bad += 1
                    continue
                wrong = [(t, w, g) for t, w, g in zip(sample, want, got) if w != g]
                for t, w, g in wrong[:3]:
                    print(f"{name} {mode}: {t!r}\n  reference {w}\n  crate     {g}")
                print(f"{name} {mode}: {len(wrong)} of {len(sample)} differ")
                bad += len(wrong)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
