#!/usr/bin/env python3
"""Write tests/golden/empty_vocab/: `tokenizer.json` files whose BPE model has
an empty vocabulary (only added tokens), as Python `tokenizers` saves them
from `Tokenizer(BPE())` plus added tokens, and `expected.json`, the
reference's answers for them (issue 39, item 6).

    pip install tokenizers==0.23.3
    python3 tests/golden/empty_vocab/make_empty_vocab_golden.py

For each file and each of `texts`: the ids without and with special tokens
(or the reference's error), the byte offsets, and the decodes of the ids
with and without skipping special tokens; the same with special tokens'
text encoded as text (`as_text`); and the decodes of every id of the file. The reference's BPE gives nothing for a word it is handed when the
model has no `unk_token`, and fails ("Unk token `<unk>` not found in the
vocabulary") when it has one, since that token is in no model vocabulary.
"""

import json
import pathlib

import tokenizers
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

HERE = pathlib.Path(__file__).resolve().parent

TEXTS = ["", " ", "abc", "hello", "hello world", "<s>hello</s>", "<s> x </s>", "hello abc world",
         "héllo\n<unk>", "<unk>", "<s>", "xhello<mask>", "h\u00e9llo", " world world", "中文 hello", "\U0010ffff"]


def build(unk=None, byte_level=False, byte_fallback=False, post=False, normalizer=False, words=True, accents=False):
    tok = Tokenizer(models.BPE(unk_token=unk, byte_fallback=byte_fallback))
    if byte_level:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
    if normalizer:
        tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
    if accents:
        tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents()])
    tok.add_special_tokens(["<s>", "</s>"] + ([unk] if unk else []) + [AddedToken("<mask>", lstrip=True)])
    if words:
        tok.add_tokens(["hello", " world"])
    if post:
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A </s>", special_tokens=[("<s>", tok.token_to_id("<s>")), ("</s>", tok.token_to_id("</s>"))])
    return tok


CASES = {
    "plain": dict(post=True),
    "unk": dict(unk="<unk>"),
    "byte_level": dict(byte_level=True),
    "byte_level_unk": dict(unk="<unk>", byte_level=True, post=True),
    "byte_fallback": dict(byte_fallback=True),
    "normalized": dict(normalizer=True, post=True),
    "specials_only": dict(words=False),
    "strip_accents": dict(accents=True),
    "strip_accents_unk": dict(accents=True, unk="<unk>", byte_level=True),
}


def char_to_byte(text, offsets):
    pos = [0]
    for ch in text:
        pos.append(pos[-1] + len(ch.encode("utf-8")))
    return [[pos[a], pos[b]] for a, b in offsets]


def answer(tok, text, special):
    try:
        enc = tok.encode(text, add_special_tokens=special)
    except Exception as e:  # the reference's refusal
        return {"error": str(e)}
    out = {"ids": enc.ids}
    if not special:
        out["offsets"] = char_to_byte(text, enc.offsets)
        out["decode"] = tok.decode(enc.ids, skip_special_tokens=False)
        out["decode_skip"] = tok.decode(enc.ids, skip_special_tokens=True)
    return out


def as_text(tok):
    """The ids with special tokens' text encoded as text (`encode_special_tokens`)."""
    tok.encode_special_tokens = True
    try:
        return [answer(tok, t, False) for t in TEXTS]
    finally:
        tok.encode_special_tokens = False


def main():
    doc = {"tokenizers": tokenizers.__version__, "texts": TEXTS, "files": {}}
    for name, kw in CASES.items():
        path = HERE / f"{name}.json"
        build(**kw).save(str(path))
        tok = Tokenizer.from_file(str(path))
        every = list(range(tok.get_vocab_size()))
        doc["files"][name] = {
            "file": f"{name}.json",
            "vocab_size": tok.get_vocab_size(),
            "plain": [answer(tok, t, False) for t in TEXTS],
            "special": [answer(tok, t, True) for t in TEXTS],
            "as_text": as_text(tok),
            "decode_all": tok.decode(every, skip_special_tokens=False),
            "decode_all_skip": tok.decode(every, skip_special_tokens=True),
        }
    (HERE / "expected.json").write_text(json.dumps(doc, ensure_ascii=True, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
