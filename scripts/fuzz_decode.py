#!/usr/bin/env python3
"""Differential fuzz of `rtok decode` against Python `tokenizers`' `decode` on
random id sequences, for every shared `tokenizer.json`, and against
`sentencepiece`'s `decode` for every shared `.model` file.

    pip install tokenizers==0.23.3 sentencepiece==0.2.3
    cargo build --release --bin rtok
    python3 scripts/fuzz_decode.py [--shared ../shared] [--seed 1] [--count 60] [--only ID,...]

A sequence joins 1 to 30 parts: random ids of the whole vocabulary (byte
pieces, pieces that are half a char, pieces of other scripts), added and
special tokens, and the first ids of encodings of texts that decoders treat
specially (leading spaces, combining marks, ZWJ emoji, contractions, CJK,
newlines and tabs), so a sequence may stop inside a char. Each is decoded with
and without `skip_special_tokens`; the text must be identical. A `.model` file
is decoded with `--skip-special-tokens` only: sentencepiece always drops
CONTROL pieces, which the crate renders when they are not skipped (a
documented deviation, DESIGN.md "Deliberate deviations from sentencepiece").
Prints the first differences and exits 1 if there was any.
"""

import argparse
import glob
import os
import random
import subprocess
import sys
from pathlib import Path

MODELS = [
    "meta-llama/Llama-3.2-1B-Instruct",
    "mistralai/Mistral-7B-v0.1",
    "mistralai/Mistral-Nemo-Instruct-2407",
    "Qwen/Qwen3-8B",
    "deepseek-ai/DeepSeek-V3",
    "google/gemma-3-4b-it",
    "openai/gpt-oss-20b",
    "CohereForAI/c4ai-command-r-plus",
    "sentence-transformers/all-MiniLM-L6-v2",
    "Xenova/gpt-3.5-turbo",
]

SPM_MODELS = [
    "spm-test_model.model",
    "spm-test_ja_model.model",
    "mistral-tokenizer.model.v1",
    "mistral_instruct_tokenizer_240323.model.v3",
    "mistral_instruct_tokenizer_241114.model.v7",
]

TEXTS = ["Hello world", "  x ", "\u4e2d\u6587\u5b57", "e\u0301\u0301", "\U0001F468\u200d\U0001F469",
         "don't", "\n\n\t", " ,. !? ", "\u00e9t\u00e9", " [CLS] ##ing", "\u2581x"]


def sequences(tok, seed, count):
    size = tok.get_vocab_size(with_added_tokens=True)
    added = sorted(tok.get_added_tokens_decoder().keys())
    r = random.Random(seed)
    out = []
    for _ in range(count):
        ids = []
        for _ in range(r.choice([1, 2, 3, 5, 10, 30])):
            x = r.random()
            if x < 0.5:
                ids.append(r.randrange(size))
            elif x < 0.7 and added:
                ids.append(r.choice(added))
            else:
                enc = tok.encode(r.choice(TEXTS), add_special_tokens=False).ids
                ids.extend(enc[:r.randint(0, 6)])
        ids = [i for i in ids if tok.id_to_token(i) is not None]
        out.append((ids, r.random() < 0.5))
    return out


def spm_sequences(sp, seed, count):
    size = sp.get_piece_size()
    r = random.Random(seed)
    out = []
    for _ in range(count):
        ids = []
        for _ in range(r.choice([1, 2, 5, 10, 30])):
            if r.random() < 0.6:
                ids.append(r.randrange(size))
            else:
                ids.extend(sp.encode(r.choice(TEXTS))[:r.randint(0, 5)])
        out.append(ids)
    return out


def compare(rtok, source, ids, skip, want, env):
    cmd = [rtok, "decode", "-t", source] + (["--skip-special-tokens"] if skip else [])
    p = subprocess.run(cmd, input=" ".join(map(str, ids)).encode(), capture_output=True, env=env)
    got = p.stdout.decode("utf-8", "replace") if p.returncode == 0 else None
    if got == want:
        return None
    return "rtok: " + (repr(got)[:300] if got is not None else "error: " + p.stderr.decode()[:200])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=str(Path(__file__).resolve().parent.parent.parent / "shared"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=60)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    from tokenizers import Tokenizer

    hub = Path(args.shared) / "hf-cache" / "hub"
    env = dict(os.environ, HF_HOME=str(Path(args.shared) / "hf-cache"), HF_HUB_OFFLINE="1")
    rtok = str(Path(__file__).resolve().parent.parent / "target/release/rtok")
    names = [n for n in args.only.split(",") if n] or MODELS
    total = bad = 0
    for name in names:
        files = glob.glob(str(hub / f"models--{name.replace('/', '--')}" / "snapshots" / "*" / "tokenizer.json"))
        if not files:
            print(f"{name}: no tokenizer.json under {hub}", file=sys.stderr)
            sys.exit(2)
        tok = Tokenizer.from_file(files[0])
        differ = 0
        for ids, skip in sequences(tok, args.seed, args.count):
            want = tok.decode(ids, skip_special_tokens=skip)
            total += 1
            why = compare(rtok, name, ids, skip, want, env)
            if why:
                differ += 1
                if differ <= 3:
                    print(f"DIFF {name} skip={skip} ids={ids[:40]}")
                    print("  tokenizers:", repr(want)[:300])
                    print("  " + why)
        bad += differ
        print(f"{name}: {differ} of {args.count} differ")
    if not args.only:
        import sentencepiece as spm

        for file in SPM_MODELS:
            path = str(Path(args.shared) / "fixtures" / "sentencepiece" / file)
            sp = spm.SentencePieceProcessor(model_file=path)
            differ = 0
            for ids in spm_sequences(sp, args.seed, args.count):
                total += 1
                why = compare(rtok, path, ids, True, sp.decode(ids), env)
                if why:
                    differ += 1
                    if differ <= 3:
                        print(f"DIFF {file} ids={ids[:40]}")
                        print("  sentencepiece:", repr(sp.decode(ids))[:300])
                        print("  " + why)
            bad += differ
            print(f"{file}: {differ} of {args.count} differ")
    print(f"total {total}, differ {bad}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
