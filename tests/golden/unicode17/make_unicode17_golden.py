#!/usr/bin/env python3
"""Write tests/golden/unicode17/unicode17.json: Python `tokenizers` ids for
texts holding letters, digits and marks new in Unicode 17 (Sidetic, Tolong
Siki letters and digits, Beria Erfe, Tai Yo, a combining mark), which `tokenizers` 1.0's pre-tokenizer classes by Unicode 17 and
the reference by Unicode 16 (DESIGN.md invariant `unicode-classes-are-reference`), and a CJK Extension H
ideograph (Unicode 15, the same class for both) as a control.

    pip install tokenizers==0.23.3
    python3 tests/golden/unicode17/make_unicode17_golden.py [--shared ../shared]

Probes put each new code point after letters, digits, spaces, newlines,
punctuation and contractions, alone and in runs; `long` is 8 KiB of English
prose with a new code point every 97 chars, for the chunked paths.
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from reference_golden import prose, shared_from_args, write_golden  # noqa: E402

MODELS = [
    "meta-llama/Meta-Llama-3-8B-Instruct",
    "Qwen/Qwen3-8B",
    "deepseek-ai/DeepSeek-V3",
    "openai/gpt-oss-20b",
    "Xenova/gpt-3.5-turbo",
    "CohereForAI/c4ai-command-r-plus",
    "mistralai/Mistral-Nemo-Instruct-2407",
]
NEW = ["\U00010940", "\U00010941", "\U00011DB0", "\U00011DB1", "\U00016EA0", "\U0001E6C0", "\U00031350",
       "\U00011DE0", "\U00011DE9", "\u1ACF",
       # Unicode 16 digits (Garay, Kirat Rai, Outlined), as a control: the same class for both.
       "\U00010D40", "\U00016D70", "\U0001CCF0"]


def probes():
    out = []
    for c in NEW:
        for ctx in ["{c}", "a {c}", "a{c}b", "1{c}2", " {c} ", "\n{c}\n", "'s{c}", "{c}'ll",
                    ",{c}.", "中{c}文", "{c}{c}{c} {c}", "  {c}  \t{c}"]:
            out.append(ctx.format(c=c))
    return out


def main():
    here = pathlib.Path(__file__).resolve().parent
    shared = shared_from_args(here)
    base = prose(shared, 10000, 18000)
    long = "".join(ch + (NEW[i // 97 % len(NEW)] if i % 97 == 96 else "") for i, ch in enumerate(base))
    write_golden(here / "unicode17.json", shared, MODELS, probes(), long)


if __name__ == "__main__":
    main()
