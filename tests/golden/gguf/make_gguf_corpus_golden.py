#!/usr/bin/env python3
"""Golden ids from llama.cpp itself for GGUF vocabularies over the shared
corpus, the adversarial files and llama.cpp's test-vector texts.

Each id list is `llama_tokenize(vocab, text, add_special=false,
parse_special=true)` on a vocab-only load, printed by tok_dump.cpp (built
against llama.cpp's `llama` library; see tok_dump.cmake and README.md) with
`llama_detokenize` of those ids (remove_special false/unparse_special true,
and remove_special true/unparse_special false), kept as sha256 prefixes of
the text read as lossy UTF-8.

Usage:
    python3 make_gguf_corpus_golden.py --tok-dump BUILD/tok_dump \
        --adversarial DIR --out tests/golden/gguf/corpus VOCAB.gguf...

DIR holds the output of `corpus/make_adversarial.py DIR` (default
arguments, as tests/it/common does). Per input file, SLICES slices of about
SLICE bytes at evenly spaced offsets (moved to UTF-8 character boundaries)
are tokenized; the first slice's ids are stored in full, every slice's id
count and the first 16 hex digits of the sha256 of its ids (u32 LE). The
vector texts (`ggml-vocab-llama-spm.gguf.inp`) are stored in full.
"""
import argparse
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

SLICES = 16
SLICE = 2048


def boundary(b: bytes, i: int) -> int:
    while 0 < i < len(b) and (b[i] & 0xC0) == 0x80:
        i += 1
    return min(i, len(b))


def back_boundary(b: bytes, i: int) -> int:
    while 0 < i < len(b) and (b[i] & 0xC0) == 0x80:
        i -= 1
    return i


def slices(data: bytes):
    n = len(data)
    if n <= SLICE:
        return [(0, n)]
    out = []
    count = min(SLICES, max(1, n // SLICE))
    step = (n - SLICE) / max(1, count - 1) if count > 1 else 0
    for k in range(count):
        s = boundary(data, int(k * step))
        e = back_boundary(data, min(n, s + SLICE))
        if e > s and (s, e - s) not in out:
            out.append((s, e - s))
    return out


def inputs(shared: Path, adversarial: Path):
    files = []
    corpus = shared / "corpus"
    for d in sorted(p for p in corpus.iterdir() if p.is_dir()):
        for f in sorted(d.iterdir()):
            files.append((f"{d.name}/{f.name}", f))
    for f in sorted(adversarial.glob("*.txt")):
        files.append((f"adversarial/{f.name}", f))
    return files


def vector_texts(shared: Path):
    raw = (shared / "fixtures/gguf/ggml-vocab-llama-spm.gguf.inp").read_text(encoding="utf-8")
    return raw.split("\n__ggml_vocab_test__\n")[:-1] if raw.endswith("\n__ggml_vocab_test__\n") else raw.split("\n__ggml_vocab_test__\n")


def run(tok_dump: str, vocab: Path, texts, full_hash=False):
    with tempfile.NamedTemporaryFile(delete=False) as f:
        f.write(struct.pack("<I", len(texts)))
        for t in texts:
            f.write(struct.pack("<I", len(t)))
            f.write(t)
        name = f.name
    try:
        # libstdc++'s std::regex recurses once per repeated character: a
        # whole 1 MB punctuation run needs a large stack (llama.cpp's
        # fallback splitter for falcon/deepseek patterns uses std::regex).
        out = subprocess.run(
            ["sh", "-c", 'ulimit -s unlimited; exec "$0" "$@"', tok_dump, str(vocab), name],
            check=True,
            capture_output=True,
        ).stdout
    finally:
        os.unlink(name)
    lines = out.decode().split("\n")[: 3 * len(texts)]
    if len(lines) != 3 * len(texts) or any(l == "ERR" for l in lines):
        sys.exit(f"{vocab}: tok_dump failed")
    ids = [[int(x) for x in l.split()] for l in lines[0::3]]
    # Decoded bytes that are not UTF-8 (a byte-level vocabulary missing some
    # bytes, byte tokens of half a character) are kept in their lossy form,
    # U+FFFD per maximal invalid subpart: what a Rust String holds.
    def h(hexbytes):
        text = bytes.fromhex(hexbytes).decode("utf-8", "replace")
        full = hashlib.sha256(text.encode()).hexdigest()
        return full if full_hash else full[:16]

    decodes = [[h(a), h(b)] for a, b in zip(lines[1::3], lines[2::3])]
    return ids, decodes


def digest(ids, n=16):
    return hashlib.sha256(struct.pack(f"<{len(ids)}I", *ids)).hexdigest()[:n]


def full(a, files):
    """One whole-file encode per input file and vocabulary."""
    texts = [path.read_bytes() for _, path in files]
    for vocab in a.vocabs:
        ids, decodes = run(a.tok_dump, vocab, texts, full_hash=True)
        head = {"vocab": vocab.name, "llama_cpp": a.llama_cpp}
        rows = [
            json.dumps(key) + ":" + json.dumps([len(text), len(got), digest(got, 64), dec], separators=(",", ":"))
            for (key, _), text, got, dec in zip(files, texts, ids, decodes)
        ]
        name = vocab.name.removesuffix(".gguf") + ".json"
        with open(a.out / name, "w") as f:
            # One line per file, so a regeneration diffs file by file.
            f.write(json.dumps(head, separators=(",", ":"))[:-1] + ',"files":{\n')
            f.write(",\n".join(rows) + "\n}}\n")
        n = sum(len(x) for x in ids)
        print(f"{name}: {len(ids)} files, {n} ids", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tok-dump", required=True)
    ap.add_argument("--adversarial", required=True, type=Path)
    ap.add_argument("--shared", type=Path, default=Path(os.environ.get("RTOK_SHARED_DIR", "../shared")))
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--llama-cpp", default="llama.cpp (see README.md)")
    ap.add_argument("--full", action="store_true", help="whole files, hashes only")
    ap.add_argument("vocabs", nargs="+", type=Path)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    files = inputs(a.shared, a.adversarial)
    if a.full:
        return full(a, files)
    plan = []  # (key, off, len, bytes)
    for key, path in files:
        data = path.read_bytes()
        for off, ln in slices(data):
            plan.append((key, off, ln, data[off : off + ln]))
    vectors = [t.encode() for t in vector_texts(a.shared)]
    for vocab in a.vocabs:
        ids, decodes = run(a.tok_dump, vocab, [p[3] for p in plan] + vectors)
        doc = {"vocab": vocab.name, "llama_cpp": a.llama_cpp, "slice": SLICE, "files": {}}
        for (key, off, ln, _), got, dec in zip(plan, ids, decodes):
            entry = doc["files"].setdefault(key, [])
            entry.append([off, ln, len(got), digest(got), got if not entry else None, dec])
        doc["vectors"] = ids[len(plan) :]
        doc["vector_decodes"] = decodes[len(plan) :]
        name = vocab.name.removesuffix(".gguf") + ".json"
        with open(a.out / name, "w") as f:
            json.dump(doc, f, separators=(",", ":"))
            f.write("\n")
        n = sum(len(x) for x in ids)
        print(f"{name}: {len(ids)} texts, {n} ids", file=sys.stderr)


if __name__ == "__main__":
    main()
