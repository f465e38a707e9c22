#!/usr/bin/env python3
"""Differential fuzz of `rtok decode` against Python `tokenizers`' `decode` on
random id sequences, for every shared `tokenizer.json`, and against
`sentencepiece`'s `decode` for every shared `.model` file (the lists of
`fuzz_reference.py`).

    pip install tokenizers==0.23.3 sentencepiece==0.2.3
    cargo build --release --bin rtok
    python3 scripts/fuzz_decode.py [--shared ../shared] [--seed 1] [--count 60] [--only NAME,...]

A sequence joins 1 to 30 parts: random ids of the whole vocabulary (byte
pieces, pieces that are half a char, pieces of other scripts), added and
special tokens, and the first ids of encodings of texts that decoders treat
specially (leading spaces, combining marks, ZWJ emoji, contractions, CJK,
newlines and tabs), so a sequence may stop inside a char. Each is decoded with
and without `skip_special_tokens`; the text must be identical. A `.model` file
is decoded with `--skip-special-tokens` only: sentencepiece always drops
CONTROL pieces, which the crate renders when they are not skipped (a
documented deviation, DESIGN.md, "Hand-written pieces and why" (the ModelProto reader)).
Prints the first differences and exits 1 if there was any.
"""

import os
import random
import subprocess
from pathlib import Path

from fuzz_reference import HF, SPM, Tally, rtok_binary, rtok_parser, selected, snapshot

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


def decode(rtok, source, ids, skip, env):
    """`rtok decode`'s text, or `None` with its error."""
    cmd = [rtok, "decode", "-t", source] + (["--skip-special-tokens"] if skip else [])
    p = subprocess.run(cmd, input=" ".join(map(str, ids)).encode(), capture_output=True, env=env)
    if p.returncode != 0:
        return None, p.stderr.decode()[:200]
    return p.stdout.decode("utf-8", "replace"), ""


def check(tally, what, ids, reference, want, got, err):
    """One decode against the reference's, the difference printed if any."""
    width = len(reference) + 1
    tally.check(got == want, lambda: [
        f"DIFF {what} ids={ids[:40]}",
        f"  {reference + ':':<{width}} " + repr(want)[:300],
        f"  {'rtok:':<{width}} " + (repr(got)[:300] if got is not None else "error: " + err),
    ])


def main():
    args = rtok_parser(__doc__, 60).parse_args()
    from tokenizers import Tokenizer

    shared = Path(args.shared)
    env = dict(os.environ, HF_HOME=str(shared / "hf-cache"), HF_HUB_OFFLINE="1")
    rtok = rtok_binary()
    tally = Tally()
    for name in selected(HF, args.only):
        tok = Tokenizer.from_file(str(snapshot(shared, name)))
        for ids, skip in sequences(tok, args.seed, args.count):
            want = tok.decode(ids, skip_special_tokens=skip)
            got, err = decode(rtok, name, ids, skip, env)
            check(tally, f"{name} skip={skip}", ids, "tokenizers", want, got, err)
        tally.report(name, args.count)
    import sentencepiece

    for file in selected(SPM, args.only):
        path = str(shared / "fixtures" / "sentencepiece" / file)
        sp = sentencepiece.SentencePieceProcessor(model_file=path)
        for ids in spm_sequences(sp, args.seed, args.count):
            want = sp.decode(ids)
            got, err = decode(rtok, path, ids, True, env)
            check(tally, file, ids, "sentencepiece", want, got, err)
        tally.report(file, args.count)
    tally.finish()


if __name__ == "__main__":
    main()
