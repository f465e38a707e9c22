#!/usr/bin/env python3
"""Single-thread encode throughput of this crate against the Python peers, on the same text.

    pip install tiktoken==0.14.0 tokenizers==0.23.3 sentencepiece==0.2.3 \
        gigatoken==0.10.0 fastokens==0.3.5 riptoken==0.2.4
    cargo build --release --example throughput
    python3 scripts/bench_peers.py [--shared ../shared] [--bytes 1048576] [--rounds 5] \
        [--only o200k_base,llama3] [--markdown]

Method (the one issue #15 describes): one file per corpus category, built from
`shared/corpus/<category>/*` up to `--bytes`; round r encodes the characters
[r*7, r*7 + M) so no whole-input memo answers; one warm-up first; medians over
the rounds. Every contender runs single-threaded (RAYON_NUM_THREADS=1, and the
peers' single-text `encode`). This crate runs in its own process
(`examples/throughput.rs`) and the peers in this one, in alternating blocks, so
machine noise spreads over all of them; compare ratios from one run, never
figures from different runs. The ids of round 0 are checked: a contender whose
ids differ from the reference (tiktoken for encodings, tokenizers for
tokenizer.json, sentencepiece for .model) is reported as inexact and is not a
"fastest exact peer". MB/s are 10^6 bytes per second.
"""

import argparse
import hashlib
import json
import os
import pathlib
import statistics
import struct
import subprocess
import sys
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = pathlib.Path(__file__).resolve().parent.parent
CATEGORIES = ["en-prose", "zh", "code", "multilingual", "structured", "math"]
SHIFT = 7
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

# name -> (crate source, kind, reference file relative to shared/)
TOKENIZERS = {
    "o200k_base": ("o200k_base", "tiktoken", "fixtures/tiktoken/o200k_base.tiktoken"),
    "cl100k_base": ("cl100k_base", "tiktoken", "fixtures/tiktoken/cl100k_base.tiktoken"),
    # Meta's Llama-3 rank file (tiktoken with Meta's pattern, as its tokenizer.py builds it).
    "llama3-rank-file": (
        "fixtures/tiktoken/llama3-tokenizer.model",
        "tiktoken",
        "fixtures/tiktoken/llama3-tokenizer.model",
    ),
    "llama3": ("meta-llama/Meta-Llama-3-8B-Instruct", "hf", None),
    "qwen3": ("Qwen/Qwen3-8B", "hf", None),
    "deepseek-v3": ("deepseek-ai/DeepSeek-V3", "hf", None),
    "gpt-oss": ("openai/gpt-oss-20b", "hf", None),
    "mistral-7b-json": ("mistralai/Mistral-7B-v0.1", "hf", None),
    "gemma3": ("google/gemma-3-4b-it", "hf", None),
    "minilm": ("sentence-transformers/all-MiniLM-L6-v2", "hf", None),
    "mistral-7b-model": (
        "fixtures/sentencepiece/mistral-tokenizer.model.v1",
        "spm",
        "fixtures/sentencepiece/mistral-tokenizer.model.v1",
    ),
    # Mistral's v3 instruct model: 770 control and user-defined pieces.
    "mistral-v3-model": (
        "fixtures/sentencepiece/mistral_instruct_tokenizer_240323.model.v3",
        "spm",
        "fixtures/sentencepiece/mistral_instruct_tokenizer_240323.model.v3",
    ),
    # sentencepiece's own test models (UNIGRAM, nfkc).
    "spm-test-unigram": (
        "fixtures/sentencepiece/spm-test_model.model",
        "spm",
        "fixtures/sentencepiece/spm-test_model.model",
    ),
    "spm-ja-unigram": (
        "fixtures/sentencepiece/spm-test_ja_model.model",
        "spm",
        "fixtures/sentencepiece/spm-test_ja_model.model",
    ),
}


def snapshot_file(shared, repo, name="tokenizer.json"):
    folder = shared / "hf-cache/hub" / ("models--" + repo.replace("/", "--"))
    commit = (folder / "refs/main").read_text().strip()
    return folder / "snapshots" / commit / name


def ids_sha256(ids):
    ids = getattr(ids, "ids", ids)
    ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
    h = hashlib.sha256()
    h.update(struct.pack(f"<{len(ids)}I", *ids))
    return h.hexdigest()


def build_inputs(shared, size, outdir):
    outdir.mkdir(parents=True, exist_ok=True)
    files = {}
    for cat in CATEGORIES:
        parts = sorted((shared / "corpus" / cat).iterdir())
        text = ""
        while len(text.encode()) < size:
            for p in parts:
                text += p.read_text(encoding="utf-8", errors="replace")
                if len(text.encode()) >= size:
                    break
        raw = text.encode()[:size].decode("utf-8", errors="ignore")
        path = outdir / f"{cat}.txt"
        path.write_text(raw, encoding="utf-8")
        files[cat] = path
    return files


def contenders(name, kind, shared, crate_source, ref_file):
    """(label, encode(str) -> list[int], is_reference) for every peer that loads it."""
    out = []
    if kind == "tiktoken":
        import tiktoken
        import tiktoken.load as tl
        import tiktoken_ext.openai_public as op

        # openai_public's own constructor (pattern, specials), reading the local rank file.
        saved = op.load_tiktoken_bpe
        op.load_tiktoken_bpe = lambda url, expected_hash=None: tl.load_tiktoken_bpe(
            str(shared / ref_file), expected_hash=expected_hash
        )
        try:
            if name == "llama3-rank-file":
                params = {
                    "name": name,
                    "pat_str": LLAMA3_PATTERN,
                    "mergeable_ranks": tl.load_tiktoken_bpe(str(shared / ref_file)),
                    "special_tokens": {},
                }
            else:
                params = op.ENCODING_CONSTRUCTORS[name]()
        finally:
            op.load_tiktoken_bpe = saved
        enc = tiktoken.Encoding(**params)
        out.append(("tiktoken", enc.encode_ordinary, True))
        try:
            import riptoken

            renc = riptoken.CoreBPE(
                params["mergeable_ranks"], params["special_tokens"], params["pat_str"]
            )
            out.append(("riptoken", renc.encode_ordinary, False))
        except Exception as e:  # noqa: BLE001
            print(f"  riptoken: {e}", file=sys.stderr)
        try:
            import gigatoken

            g = gigatoken.Tokenizer.from_tiktoken(shared / ref_file)
            out.append(("gigatoken", lambda t, g=g: g.encode(t).tolist(), False))
        except Exception as e:  # noqa: BLE001
            print(f"  gigatoken: {e}", file=sys.stderr)
        try:
            import fastokens

            f = fastokens.Tokenizer.from_tiktoken(str(shared / ref_file), encoding=name)
            out.append(("fastokens", f.encode_ordinary, False))
        except Exception as e:  # noqa: BLE001
            print(f"  fastokens: {e}", file=sys.stderr)
    elif kind == "hf":
        path = snapshot_file(shared, crate_source)
        import tokenizers

        t = tokenizers.Tokenizer.from_file(str(path))
        t.no_padding()
        t.no_truncation()
        out.append(("tokenizers", lambda s, t=t: t.encode(s, add_special_tokens=False).ids, True))
        try:
            import gigatoken

            g = gigatoken.Tokenizer(path)
            out.append(("gigatoken", lambda s, g=g: g.encode(s).tolist(), False))
        except Exception as e:  # noqa: BLE001
            print(f"  gigatoken: {e}", file=sys.stderr)
        try:
            import fastokens

            f = fastokens.Tokenizer.from_file(str(path))
            f.no_padding()
            f.no_truncation()
            out.append(("fastokens", lambda s, f=f: f.encode(s).ids, False))
        except Exception as e:  # noqa: BLE001
            print(f"  fastokens: {e}", file=sys.stderr)
    elif kind == "spm":
        import sentencepiece

        sp = sentencepiece.SentencePieceProcessor(model_file=str(shared / ref_file))
        out.append(("sentencepiece", sp.EncodeAsIds, True))
        try:
            import gigatoken

            g = gigatoken.Tokenizer.from_sentencepiece(shared / ref_file)
            out.append(("gigatoken", lambda s, g=g: g.encode(s).tolist(), False))
        except Exception as e:  # noqa: BLE001
            print(f"  gigatoken: {e}", file=sys.stderr)
    return out


def crate_run(binary, source, path, rounds, shared):
    env = dict(os.environ, RAYON_NUM_THREADS="1", RTOK_SHARED_DIR=str(shared))
    if source.startswith("fixtures/"):
        source = str(shared / source)
    out = subprocess.run(
        [str(binary), source, str(path), str(rounds), str(SHIFT)],
        env=env, check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=str(ROOT.parent / "shared"))
    ap.add_argument("--bytes", type=int, default=1 << 20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="")
    ap.add_argument("--categories", default=",".join(CATEGORIES))
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    shared = pathlib.Path(args.shared).resolve()
    binary = ROOT / "target/release/examples/throughput"
    if not binary.exists():
        sys.exit("build it first: cargo build --release --example throughput")
    inputs = build_inputs(shared, args.bytes, ROOT / "target/bench-peers")
    names = [n for n in TOKENIZERS if not args.only or n in args.only.split(",")]
    cats = args.categories.split(",")
    rows = []
    for name in names:
        source, kind, ref_file = TOKENIZERS[name]
        peers = contenders(name, kind, shared, source, ref_file)
        for cat in cats:
            text = inputs[cat].read_text(encoding="utf-8")
            keep = len(text) - args.rounds * SHIFT
            slices = [text[r * SHIFT : r * SHIFT + keep] for r in range(args.rounds)]
            nbytes = len(slices[0].encode())
            times = {label: [] for label, _, _ in peers}
            hashes = {}
            for label, enc, _ in peers:
                hashes[label] = ids_sha256(enc(slices[0]))  # also the warm-up
            crate = {"times_ms": []}
            # Alternate blocks: the crate's rounds, then each peer's, twice.
            for block in range(2):
                run = crate_run(binary, source, inputs[cat], args.rounds, shared)
                crate["times_ms"] += run["times_ms"]
                crate.update({k: v for k, v in run.items() if k != "times_ms"})
                order = peers if block == 0 else list(reversed(peers))
                for label, enc, _ in order:
                    for s in slices:
                        t0 = time.perf_counter()
                        enc(s)
                        times[label].append((time.perf_counter() - t0) * 1e3)
            ref_hash = next(hashes[l] for l, _, is_ref in peers if is_ref)
            row = {
                "tokenizer": name,
                "corpus": cat,
                "bytes": nbytes,
                "crate": {
                    "mb_s": nbytes / 1e3 / statistics.median(crate["times_ms"]),
                    "exact": crate["ids_sha256"] == ref_hash,
                    "load_ms": crate["load_ms"],
                    "first_encode_ms": crate["first_encode_ms"],
                    "warm_up_ms": crate.get("warm_up_ms"),
                },
                "peers": {
                    label: {
                        "mb_s": nbytes / 1e3 / statistics.median(times[label]),
                        "exact": hashes[label] == ref_hash,
                    }
                    for label, _, _ in peers
                },
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.markdown:
        labels = []
        for r in rows:
            for label in r["peers"]:
                if label not in labels:
                    labels.append(label)
        print("\n| tokenizer | corpus | this crate | " + " | ".join(labels) + " | crate / fastest exact peer |")
        print("|---|---|---|" + "---|" * len(labels) + "---|")
        for r in rows:
            cells = []
            for label in labels:
                p = r["peers"].get(label)
                cells.append("–" if p is None else f"{p['mb_s']:.1f}" + ("" if p["exact"] else " (inexact)"))
            exact = [p["mb_s"] for p in r["peers"].values() if p["exact"]]
            ratio = r["crate"]["mb_s"] / max(exact) if exact else float("nan")
            crate = f"{r['crate']['mb_s']:.1f}" + ("" if r["crate"]["exact"] else " (inexact)")
            print(f"| {r['tokenizer']} | {r['corpus']} | {crate} | " + " | ".join(cells) + f" | {ratio:.2f}× |")


if __name__ == "__main__":
    main()
