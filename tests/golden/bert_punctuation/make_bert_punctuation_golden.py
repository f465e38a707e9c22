#!/usr/bin/env python3
"""Write tests/golden/bert_punctuation/bert_punctuation.json: Python
`tokenizers` ids (MiniLM, a BERT WordPiece) for texts holding punctuation
that `tokenizers` 1.0's `BertPreTokenizer` isolates and the reference keeps
inside a word (its `unicode_categories` tables predate Unicode 10), and
U+166D, punctuation for the reference and a symbol since Unicode 12
(DESIGN.md invariant `unicode-classes-are-reference`). A few punctuation marks both class alike are
controls.

    pip install tokenizers==0.23.3
    python3 tests/golden/bert_punctuation/make_bert_punctuation_golden.py [--shared ../shared]

Probes put each code point between letters, digits, spaces, other
punctuation, CJK and accents; `long` is 8 KiB of English prose with one
every 89 chars, for the chunked paths. Padding and truncation are off: the
crate encodes without them.
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from reference_golden import prose, shared_from_args, write_golden  # noqa: E402

MODELS = ["sentence-transformers/all-MiniLM-L6-v2"]
# One or two code points of every range of BERT_DIVERGENT (src/backend/divergence.rs).
DIVERGENT = ["\u061D", "\u09FD", "\u0A76", "\u0C77", "\u0C84", "\u166D", "\u1B4E", "\u1B7F",
             "\u2E43", "\u2E4E", "\u2E4F", "\u2E52", "\u2E5D", "\U00010D6E", "\U00010EAD",
             "\U00010ED0", "\U00010F55", "\U00010F89", "\U000111C9", "\U000113D4", "\U000113D8",
             "\U0001144B", "\U0001145A", "\U0001145D", "\U00011660", "\U0001166C", "\U000116B9",
             "\U0001183B", "\U00011944", "\U000119E2", "\U00011A3F", "\U00011A9A", "\U00011AA2",
             "\U00011B00", "\U00011B09", "\U00011BE1", "\U00011C41", "\U00011C70", "\U00011EF7",
             "\U00011EF8", "\U00011F43", "\U00011F4F", "\U00011FFF", "\U00012FF1", "\U00016D6D",
             "\U00016E97", "\U00016FE2", "\U0001E5FF", "\U0001E95E", "\U0001E95F"]
# Punctuation both class alike (controls).
CONTROLS = ["!", "\u00BF", "\u2014", "\u3002", "\u2E3A"]


def probes():
    out = []
    for c in DIVERGENT + CONTROLS:
        for ctx in ["{c}", "a{c}b", "word{c}", "{c}word", "12{c}34", " {c} ", "x {c}{c}y",
                    ",{c}.", "中{c}文", "e\u0301{c}\u00e9", "{c}{c}{c} {c}", "tx1{c}?"]:
            out.append(ctx.format(c=c))
    return out


def main():
    here = pathlib.Path(__file__).resolve().parent
    shared = shared_from_args(here)
    base = prose(shared, 20000, 28000)
    long = "".join(ch + (DIVERGENT[i // 89 % len(DIVERGENT)] if i % 89 == 88 else "")
                   for i, ch in enumerate(base))
    write_golden(here / "bert_punctuation.json", shared, MODELS, probes(), long, plain=True)


if __name__ == "__main__":
    main()
