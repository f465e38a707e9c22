#!/usr/bin/env python3
"""Regenerate the SentencePiece parity goldens (expected.json).

Reference: Google's `sentencepiece` Python package (pinned, see README.md).
For every fixture model x every corpus file x every adversarial file this
records the number of ids, sha256 of the ids as little-endian u32, and sha256
of the UTF-8 bytes of decode(ids). For ~40 short hostile strings it records
the full id lists and decoded text, and for a few deterministic id sequences
(byte pieces forming invalid UTF-8, control and unknown ids, leading-space
cases) it records decode output.

Every file is encoded as ONE string (no line splitting).

It also records "variants": fixture models with a few protobuf fields
appended (protobuf merges an appended `trainer_spec`/`normalizer_spec` into
the existing one and appends extra `pieces`), and four tiny models trained
with sentencepiece (variants/*.model, committed; `--train-variants` retrains
them). They cover settings the fixtures do not use: no dummy prefix,
whitespace removal or suffix handling on BPE, unescaped spaces, custom
unk_surface, BPE without byte fallback (runs of unknowns merged), UNUSED
pieces in BPE, user-defined symbols in BPE and Unigram, Unigram with byte
fallback, WORD and CHAR models, custom normalization and denormalization
rules, and models sentencepiece refuses to load. For each variant: whether it
loads, and per text (the short strings plus a 64 KiB prefix of every input
file) the ids/decode hashes.

Usage:
    python3 make_spm_golden.py [--shared DIR] [--out expected.json] [--train-variants]

DIR defaults to $RTOK_SHARED_DIR, else ../shared relative to the crate root
(the crate root is three levels above this script).
"""
import argparse
import hashlib
import json
import os
import platform
import random
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import sentencepiece as spm

MODELS = [
    "mistral-tokenizer.model.v1",
    "mistral_instruct_tokenizer_240323.model.v3",
    "mistral_instruct_tokenizer_241114.model.v7",
    "spm-test_model.model",
    "spm-test_ja_model.model",
]
SKIP_CORPUS = {"README.md", "SHA256SUMS", "make_adversarial.py"}

# Short hostile strings: full id lists are stored for these.
SHORT = [
    "",
    " ",
    "   ",
    "\t",
    "\n",
    "\r\n",
    "   leading spaces",
    "trailing spaces   ",
    "a  b   c",
    "Hello world",
    "\u2581",
    "\u2581\u2581x",
    " \u2581 ",
    "<s>",
    "</s>",
    "<unk>",
    "[INST] hi [/INST]",
    "[REFERENCE_DOC_1]x[REF]y",
    "<0x41>",
    "\x00",
    "a\x00b",
    "\ufeffBOM",
    "\ufb01 ligature \u2460\u2461",
    "\uff21\uff42\uff43 \uff76\uff9e",
    "e\u0301 vs \u00e9",
    "\U0001F468\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466",
    "\U0010FFFF\U000E0001",
    "\ud7ff\ue000",
    "Z\u0351\u0352\u0353\u0354a\u0300\u0301\u0302",
    "1234567890 3.14159",
    "  \u3000 x \u3000",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8",
    "\ud55c\uad6d\uc5b4 \u0627\u0644\u0639\u0631\u0628\u064a\u0629",
    "\u0915\u094d\u0937 \u0e01\u0e33",
    "x" * 300,
    "\u00a0nbsp\u00a0",
    "\u200b\u200c\u200d",
    "\U0001d518\U0001d52b",
    "tab\tsep\tvalues\n",
    "    def f(x):\n        return x\n",
]


# --- variants -------------------------------------------------------------

def pb_varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def pb_len(field, payload):
    return pb_varint((field << 3) | 2) + pb_varint(len(payload)) + payload


def pb_int(field, v):
    return pb_varint(field << 3) + pb_varint(v & 0xFFFFFFFFFFFFFFFF)


def pb_float(field, v):
    return pb_varint((field << 3) | 5) + struct.pack("<f", v)


def trainer(*fields):
    return pb_len(2, b"".join(fields))


def normalizer(*fields):
    return pb_len(3, b"".join(fields))


def piece(text, score, ptype):
    return pb_len(1, pb_len(1, text.encode("utf-8")) + pb_float(2, score) + pb_int(3, ptype))


V1, V3 = "mistral-tokenizer.model.v1", "mistral_instruct_tokenizer_240323.model.v3"
UNI, JA = "spm-test_model.model", "spm-test_ja_model.model"
# (name, base model: fixture file name or "variants/<file>", appended bytes)
VARIANTS = [
    ("v1+no_dummy_prefix", V1, normalizer(pb_int(3, 0))),
    ("v1+remove_extra_whitespaces", V1, normalizer(pb_int(4, 1))),
    ("v1+whitespace_suffix", V1, trainer(pb_int(24, 1))),
    ("v1+no_escape", V1, normalizer(pb_int(5, 0))),
    ("v1+unk_surface", V1, trainer(pb_len(44, "<?>".encode()))),
    ("v1+no_byte_fallback(error)", V1, trainer(pb_int(35, 0))),
    ("v1+unused_pieces", V1, b"".join(piece(p, 10.0 + i, 5) for i, p in enumerate(
        ["▁of▁the", "ing▁", "▁and▁the", "ed▁", "▁in▁the", "▁the▁", "er▁", ".▁", ",▁"]))),
    ("v1+user_defined", V1, b"".join(piece(p, 0.0, 4) for p in
        ["▁the▁quick", "<|im_start|>", "qxz", "▁theat", "日本"])),
    ("v3+unigram", V3, trainer(pb_int(3, 1))),
    ("spm+bpe", UNI, trainer(pb_int(3, 2))),
    ("spm+word", UNI, trainer(pb_int(3, 3))),
    ("spm+char", UNI, trainer(pb_int(3, 4))),
    ("spm+no_dummy_no_remove_ws", UNI, normalizer(pb_int(3, 0), pb_int(4, 0))),
    ("spm+user_defined+unused", UNI, b"".join(piece(p, -1.0, t) for p, t in
        [("<tag>", 4), ("▁hello▁world", 4), ("xyz", 4), ("ght", 4), ("ood", 5), ("▁wor", 5)])),
    ("spm+byte_fallback(error)", UNI, trainer(pb_int(35, 1))),
    ("ja+whitespace_suffix", JA, trainer(pb_int(24, 1))),
    ("ja+unk_surface_empty", JA, trainer(pb_len(44, b""))),
    ("uni_custom", "variants/uni_custom.model", b""),
    ("bpe_plain", "variants/bpe_plain.model", b""),
    ("word", "variants/word.model", b""),
    ("char", "variants/char.model", b""),
]
VARIANT_PREFIX = 64 * 1024


def train_variants(shared, outdir):
    inp = str(shared / "fixtures" / "sentencepiece" / "botchan.txt")
    norm, denorm = str(outdir / "norm.tsv"), str(outdir / "denorm.tsv")
    specs = [
        ("uni_custom", dict(model_type="unigram", vocab_size=400, byte_fallback=True,
                            user_defined_symbols=["<tag>", "[X]", "▁hello▁world"],
                            control_symbols=["<ctl>"], normalization_rule_tsv=norm,
                            denormalization_rule_tsv=denorm, unk_surface="<?>")),
        ("bpe_plain", dict(model_type="bpe", vocab_size=500, byte_fallback=False,
                           normalization_rule_name="identity", add_dummy_prefix=False,
                           remove_extra_whitespaces=False, user_defined_symbols=["<tag>"])),
        ("word", dict(model_type="word", vocab_size=600, normalization_rule_name="identity")),
        ("char", dict(model_type="char", vocab_size=100, normalization_rule_name="identity",
                      user_defined_symbols=["ab", "<tag>"])),
    ]
    for name, opts in specs:
        spm.SentencePieceTrainer.train(input=inp, model_prefix=str(outdir / name),
                                       num_threads=1, minloglevel=2, **opts)
        (outdir / (name + ".vocab")).unlink()


def prefix(data, n):
    """At most n bytes of UTF-8 data, cut at a character boundary."""
    if len(data) <= n:
        return data
    while n > 0 and (data[n] & 0xC0) == 0x80:
        n -= 1
    return data[:n]


def variant_entries(fixtures, golden_dir, files):
    out = []
    for name, base, patch in VARIANTS:
        src = golden_dir / base if base.startswith("variants/") else fixtures / base
        proto = src.read_bytes() + patch
        entry = {"name": name, "base": base, "patch_hex": patch.hex()}
        try:
            sp = spm.SentencePieceProcessor(model_proto=proto)
        except Exception as e:  # sentencepiece refuses the model
            entry["load_error"] = str(e).splitlines()[0][:200]
            out.append(entry)
            continue
        entry["short"] = []
        for s in SHORT:
            ids = sp.encode(s)
            entry["short"].append({"ids": ids, "decode": decode_bytes(sp, ids).decode("utf-8")})
        entry["files"] = {}
        for fname, data in files:
            text = prefix(data, VARIANT_PREFIX).decode("utf-8")
            ids = sp.encode(text)
            entry["files"][fname] = {
                "n_ids": len(ids),
                "ids_sha256": ids_sha(ids),
                "decode_sha256": hashlib.sha256(decode_bytes(sp, ids)).hexdigest(),
            }
        print(f"variant {name}", file=sys.stderr)
        out.append(entry)
    return out


def shared_dir(arg):
    if arg:
        return Path(arg)
    env = os.environ.get("RTOK_SHARED_DIR")
    if env:
        return Path(env)
    crate = Path(__file__).resolve().parents[3]
    return crate.parent / "shared"


def ids_sha(ids):
    return hashlib.sha256(struct.pack("<%dI" % len(ids), *ids)).hexdigest()


def decode_bytes(sp, ids):
    return sp.decode(ids, out_type=bytes)


def decode_cases(sp, seed):
    """Deterministic id sequences that stress decode."""
    n = sp.get_piece_size()
    byte_ids = [i for i in range(n) if sp.is_byte(i)]
    ctrl = [i for i in range(n) if sp.is_control(i)]
    unk = [i for i in range(n) if sp.is_unknown(i)]
    rng = random.Random(seed)
    cases = []
    space = sp.piece_to_id("\u2581")
    hello = sp.encode("Hello world")
    cases.append(hello)
    cases.append(ctrl[:2] + hello)
    cases.append(unk + hello + unk + unk)
    if space != sp.unk_id():
        cases.append([space, space] + hello)
        cases.append(ctrl[:1] + [space] + hello)
    if byte_ids:
        b = {sp.id_to_piece(i): i for i in byte_ids}
        def bp(x):
            return b["<0x%02X>" % x]
        cases.append([bp(0xE2), bp(0x82), bp(0xAC)])          # valid 3-byte
        cases.append([bp(0xE2), bp(0x82)])                    # truncated
        cases.append([bp(0xE2), bp(0x82)] + hello)            # truncated then text
        cases.append([bp(0xFF), bp(0xC0), bp(0x80), bp(0x41)])
        cases.append([bp(0xED), bp(0xA0), bp(0x80)])          # surrogate
        cases.append([bp(0xF4), bp(0x90), bp(0x80), bp(0x80)])  # > U+10FFFF
        cases.append([bp(0x20), bp(0x41)] + ctrl[:1] + [bp(0xF0), bp(0x9F)] + hello)
        cases.append(ctrl[:1] + [bp(0x41)] + hello)
    for _ in range(12):
        k = rng.randint(1, 40)
        cases.append([rng.randrange(n) for _ in range(k)])
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared")
    ap.add_argument("--out", default=str(Path(__file__).with_name("expected.json")))
    ap.add_argument("--train-variants", action="store_true",
                    help="retrain variants/*.model before generating")
    args = ap.parse_args()
    shared = shared_dir(args.shared)
    fixtures = shared / "fixtures" / "sentencepiece"
    corpus = shared / "corpus"
    if not fixtures.is_dir() or not corpus.is_dir():
        sys.exit(f"shared data not found under {shared} (set RTOK_SHARED_DIR)")

    files = []
    for p in sorted(corpus.rglob("*")):
        if p.is_file() and p.name not in SKIP_CORPUS:
            files.append(("corpus/" + p.relative_to(corpus).as_posix(), p.read_bytes()))
    with tempfile.TemporaryDirectory() as td:
        subprocess.run([sys.executable, str(corpus / "make_adversarial.py"), td],
                       check=True, stdout=subprocess.DEVNULL)
        for p in sorted(Path(td).iterdir()):
            if p.suffix == ".txt":
                files.append(("adversarial/" + p.name, p.read_bytes()))

    out = {
        "generator": "make_spm_golden.py",
        "sentencepiece_version": spm.__version__,
        "python_version": platform.python_version(),
        "encode_mode": "whole file as one string; EncodeAsIds (no bos/eos); decode = DecodeIds as UTF-8 bytes",
        "files": {name: {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
                  for name, data in files},
        "models": {},
    }
    for mi, mname in enumerate(MODELS):
        mpath = fixtures / mname
        mbytes = mpath.read_bytes()
        sp = spm.SentencePieceProcessor(model_file=str(mpath))
        entry = {
            "sha256": hashlib.sha256(mbytes).hexdigest(),
            "vocab_size": sp.get_piece_size(),
            "bos_id": sp.bos_id(), "eos_id": sp.eos_id(),
            "unk_id": sp.unk_id(), "pad_id": sp.pad_id(),
            "files": {}, "short": [], "decode": [],
        }
        for name, data in files:
            text = data.decode("utf-8")
            ids = sp.encode(text)
            dec = decode_bytes(sp, ids)
            entry["files"][name] = {
                "n_ids": len(ids),
                "ids_sha256": ids_sha(ids),
                "decode_sha256": hashlib.sha256(dec).hexdigest(),
            }
            print(f"{mname} {name} {len(ids)}", file=sys.stderr)
        for s in SHORT:
            ids = sp.encode(s)
            entry["short"].append({"text": s, "ids": ids,
                                   "decode": decode_bytes(sp, ids).decode("utf-8")})
        for ids in decode_cases(sp, 1000 + mi):
            entry["decode"].append({"ids": ids,
                                    "text": decode_bytes(sp, ids).decode("utf-8")})
        out["models"][mname] = entry
    golden_dir = Path(__file__).resolve().parent
    if args.train_variants:
        train_variants(shared, golden_dir / "variants")
    out["variant_prefix_bytes"] = VARIANT_PREFIX
    out["variants"] = variant_entries(fixtures, golden_dir, files)
    Path(args.out).write_text(json.dumps(out, indent=1, ensure_ascii=True) + "\n")


if __name__ == "__main__":
    main()
