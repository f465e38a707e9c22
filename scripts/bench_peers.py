#!/usr/bin/env python3
"""Single-thread encode throughput of this crate against the Python peers: text seen once.

    pip install tiktoken==0.14.0 tokenizers==0.23.3 sentencepiece==0.2.3 gigatoken==0.10.0 \
        fastokens==0.3.5 riptoken==0.2.4 tokie==0.1.4 kitoken==0.11.1 bpe-openai==0.1.4 \
        mistral-common==1.13.1
    cargo build --release --features tools --bin throughput
    python3 scripts/bench_peers.py [--shared ../shared] [--piece 8192,65536] [--rounds 3] \
        [--round-bytes 262144] [--only o200k_base,llama3] [--categories en-prose,zh,mixed] \
        [--cpu 1] [--markdown [FILE]] [--json FILE]
    python3 scripts/bench_peers.py --smoke   # 8 KiB pieces, 1 round, 2 tokenizers, 2 kinds

The default protocol (issue #43): **text seen once**, as most of a router's
prompt text is.

- Pieces. Each corpus kind (`shared/corpus/<kind>/`, its files concatenated
  in name order: en-prose, zh, code, multilingual, structured, math) is cut
  into distinct pieces of `--piece` bytes (8 KiB and 64 KiB by default; each
  piece size is a cell of its own), spread evenly over the kind's whole text
  and cut back to a character boundary. Of each run of rounds + 1 adjacent
  pieces, one goes to the warm-up and one to each timed round, so every
  round holds `--round-bytes` of text (256 KiB: 32 pieces of 8 KiB or 4 of
  64 KiB; math, 590 KB in all, has fewer) spread like the others' over the
  kind. `mixed`, "all six kinds mixed", is a cell whose warm-up and rounds are
  the six kinds' pieces taken in turn (en-prose, zh, code, … , en-prose, …):
  one thread's caches then hold six kinds of words at once.
- Warm-up. Every contender loads the tokenizer (timed) and encodes each
  warm-up piece once (the first one timed: the first encode after the load):
  other text of the same kinds, so word caches are warm, but no memo of
  whole lines or texts can answer a timed piece.
- Seen once. Timed round r encodes each piece of round r exactly once (the
  sum of the per-piece calls is the round's time). The rounds are
  interleaved: round r runs every contender in turn (this crate first, the
  peers in one order, the next round in the reverse order), so machine noise
  spreads over all of them; a cell's figure is the median over `--rounds`
  (3) rounds of MB/s (10^6 bytes per second).
- Fresh processes. Every contender runs in a process of its own, started
  for the cell and driven over a pipe (this crate: `tools/throughput.rs
  --pieces`, in release; each peer: this script's `--worker` mode), so
  nothing one cell encoded (a peer's process-wide cache included) is there
  in the next, and the 8 KiB and 64 KiB cells may share text. Each process
  fixes glibc's allocator thresholds at start, as a process that has run a
  while has them (`docs/perf/design_log/byte_level.md` (entry 354)).
- One core. Every contender is single-threaded: RAYON_NUM_THREADS=1,
  TOKENIZERS_PARALLELISM=false, this crate's `encode_sequential` and each
  peer's single-text encode; every process is pinned to the same one core
  (the last this script may run on, or `--cpu N`; `--no-pin` leaves it to the
  scheduler), and a peer whose process CPU time over its rounds exceeded its
  wall time by 30 % is marked "mt".
- Exactness. Each piece's ids are hashed (sha256 of little-endian u32s) and
  compared with the reference's: tiktoken for encodings and rank files,
  tokenizers for tokenizer.json, sentencepiece for .model, mistral-common
  for tekken.json. A peer whose ids
  differ on any piece of a cell is marked inexact there and never counts as
  the fastest exact peer; if this crate's ids differ anywhere the script
  says so and exits with status 1. Converting a peer's result to a list of
  ids (for the hash) is not timed.
- The report: per tokenizer and piece size, a cell for each kind and for
  mixed, with this crate's MB/s and its ratio to the fastest exact peer
  (> 1: the crate is faster), then every contender's figures.

**Text seen again**, the second table, clearly apart: after seen-once round r
every contender encodes round r's pieces twice more (2nd and 3rd sighting,
timed, interleaved the same way; the 3rd is the table's figure, the crate's
2nd in a column of its own). No prompt cache of the handle answers there:
`encode_sequential` never consults the L0/L1 prompt caches. What answers
the crate's repeats is inside its backend, per thread: its word caches
(the line memo that answered whole line groups from the 3rd sighting is
gone: it cost text seen once, `docs/decisions/memos.md`). A last column, "L0 hit", is the
handle's own L0 prompt cache (on by default; it stores a text on its second
miss): `Tokenizer::encode` on each piece twice untimed, then timed once, a
copy of stored ids. Seen-once pieces cannot reach the L0 cache: they go
through `encode_sequential`, and each is encoded once.

Cold start (a third table): the load call and the first encode after it
(the first warm-up piece; this crate: before `warm_up`, whose wait for what
the load left building in the background is in brackets), medians over the
tokenizer's cells.

Older protocols, kept so earlier figures (README, DESIGN.md) can be
reproduced: `--shifted` (the previous default, issue #15: one file per
category cut to `--bytes`, plus `mixed`, the six concatenated; slice r is the
characters [r*7, r*7 + M) of the file, the first encode takes slice 0 and
timed round r slice r, so no whole-input memo answers: text seen again) and `--unseen` (the same with `(rounds + 2) * --bytes`
files cut into disjoint slices). In both, this crate runs in a fresh process
per block (two blocks a cell, crate then the peers, crate then the peers in
reverse order), the peers in this process; medians over `--rounds` (5).
Compare ratios from one run, never figures across runs.
"""

import argparse
import array
import gc
import hashlib
import importlib.metadata
import json
import os
import pathlib
import platform
import statistics
import struct
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")  # read rank files in place, no temp copy

ROOT = pathlib.Path(__file__).resolve().parent.parent
CATEGORIES = ["en-prose", "zh", "code", "multilingual", "structured", "math"]
MIXED = "mixed"
SHIFT = 7
PEER_PACKAGES = [
    "tiktoken",
    "riptoken",
    "bpe-openai",
    "gigatoken",
    "fastokens",
    "tokie",
    "kitoken",
    "tokenizers",
    "sentencepiece",
    "mistral-common",
]
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
    # Mistral's tekken.json against mistral-common's Tekkenizer (tiktoken
    # inside), and the tokenizer.json peers on Mistral-Nemo's file: the same
    # vocabulary, pattern and ids.
    "tekken": (
        "fixtures/mistral/tekken_240911.json",
        "tekken",
        "fixtures/mistral/tekken_240911.json",
    ),
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
SMOKE_TOKENIZERS = "o200k_base,llama3"
# The tokenizer.json with tekken.json's vocabulary, for the peers that read no tekken.json.
TEKKEN_JSON_PEER = "mistralai/Mistral-Nemo-Instruct-2407"
SMOKE_CATEGORIES = "en-prose,mixed"


class Peer:
    """One Python contender: `load()` returns the object, `encode(obj, text)` is
    the timed native call, `ids(result)` the untimed conversion to a list."""

    def __init__(self, label, load, encode, ids=lambda r: r, reference=False):
        self.label, self.load, self.encode, self.ids = label, load, encode, ids
        self.reference = reference
        self.error = None  # why it cannot load or encode this tokenizer, once known


def snapshot_file(shared, repo, name="tokenizer.json"):
    folder = shared / "hf-cache/hub" / ("models--" + repo.replace("/", "--"))
    commit = (folder / "refs/main").read_text().strip()
    return folder / "snapshots" / commit / name


def ids_sha256(ids):
    ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
    h = hashlib.sha256()
    h.update(struct.pack(f"<{len(ids)}I", *ids))
    return h.hexdigest()


def read_text(path):
    """The file's exact text (no newline translation, as the crate reads it)."""
    return path.read_bytes().decode("utf-8", errors="replace")


def build_inputs(shared, size, outdir, cats):
    outdir.mkdir(parents=True, exist_ok=True)
    texts = {}
    for cat in CATEGORIES:
        raw = b"".join(read_text(p).encode() for p in sorted((shared / "corpus" / cat).iterdir()))
        texts[cat] = raw[:size].decode("utf-8", errors="ignore")
    texts[MIXED] = "".join(texts[c] for c in CATEGORIES)
    files = {}
    for cat in cats:
        path = outdir / f"{cat}-{size}.txt"
        path.write_bytes(texts[cat].encode())
        files[cat] = path
    return files


def peer_builders(name, kind, shared, crate_source, ref_file):
    """Label -> a function that imports the peer's module and returns its
    `Peer`, for every peer that may load this tokenizer, the reference first.
    Nothing is imported until a function is called (a worker process calls
    only its own), and no load call pays for an import."""
    out = {}
    if kind == "tiktoken":
        path = shared / ref_file

        def tiktoken_params():
            import tiktoken.load as tl
            import tiktoken_ext.openai_public as op

            if name == "llama3-rank-file":
                return {
                    "name": name,
                    "pat_str": LLAMA3_PATTERN,
                    "mergeable_ranks": tl.load_tiktoken_bpe(str(path)),
                    "special_tokens": {},
                }
            # openai_public's own constructor (pattern, specials), reading the local rank file.
            saved = op.load_tiktoken_bpe
            op.load_tiktoken_bpe = lambda url, expected_hash=None: tl.load_tiktoken_bpe(
                str(path), expected_hash=expected_hash
            )
            try:
                return op.ENCODING_CONSTRUCTORS[name]()
            finally:
                op.load_tiktoken_bpe = saved

        def tiktoken_peer():
            import tiktoken

            return Peer(
                "tiktoken",
                lambda: tiktoken.Encoding(**tiktoken_params()),
                lambda e, s: e.encode_ordinary(s),
                reference=True,
            )

        def riptoken_peer():
            import riptoken

            params = tiktoken_params()
            pattern, specials = params["pat_str"], params["special_tokens"]
            return Peer(
                "riptoken",
                lambda: riptoken.CoreBPE(riptoken.load_tiktoken_bpe(path), specials, pattern),
                lambda e, s: e.encode_ordinary(s),
            )

        def bpe_openai_peer():
            # Its own copies of the two OpenAI rank files; the native binding,
            # not the tiktoken-like Python wrapper around it.
            import bpe_openai._bindings as bindings

            return Peer(
                "bpe-openai",
                lambda: bindings.tokenizer_for_encoding(name),
                lambda b, s: b.encode(s),
            )

        def gigatoken_peer():
            import gigatoken

            # Not an OpenAI file name: name the scheme (cl100k's pattern is
            # Llama-3's up to possessive quantifiers; the id check decides).
            kw = {"pretokenizer": "cl100k"} if name == "llama3-rank-file" else {}
            return Peer(
                "gigatoken",
                lambda: gigatoken.Tokenizer.from_tiktoken(path, **kw),
                lambda g, s: g.encode(s),
            )

        def fastokens_peer():
            import fastokens

            kw = (
                {"pattern": LLAMA3_PATTERN, "special_tokens": {}}
                if name == "llama3-rank-file"
                else {"encoding": name}
            )
            return Peer(
                "fastokens",
                lambda: fastokens.Tokenizer.from_tiktoken(str(path), **kw),
                lambda f, s: f.encode_ordinary(s),
                lambda r: r.ids,
            )

        def kitoken_peer():
            import kitoken

            # kitoken picks the pattern itself; the id check decides.
            return Peer(
                "kitoken",
                lambda: kitoken.Kitoken.from_tiktoken_file(str(path)),
                lambda k, s: k.encode(s, False),
            )

        out["tiktoken"] = tiktoken_peer
        out["riptoken"] = riptoken_peer
        if name in ("o200k_base", "cl100k_base"):
            out["bpe-openai"] = bpe_openai_peer
        out["gigatoken"] = gigatoken_peer
        out["fastokens"] = fastokens_peer
        out["kitoken"] = kitoken_peer
    elif kind == "hf":
        path = snapshot_file(shared, crate_source)

        def tokenizers_peer():
            import tokenizers

            def load():
                t = tokenizers.Tokenizer.from_file(str(path))
                t.no_padding()
                t.no_truncation()
                return t

            return Peer(
                "tokenizers",
                load,
                lambda t, s: t.encode(s, add_special_tokens=False),
                lambda r: r.ids,
                reference=True,
            )

        def gigatoken_peer():
            import gigatoken

            return Peer("gigatoken", lambda: gigatoken.Tokenizer(path), lambda g, s: g.encode(s))

        def fastokens_peer():
            import fastokens

            def load():
                f = fastokens.Tokenizer.from_file(str(path))
                f.no_padding()
                f.no_truncation()
                return f

            return Peer(
                "fastokens",
                load,
                lambda f, s: f.encode(s, add_special_tokens=False),
                lambda r: r.ids,
            )

        def tokie_peer():
            import tokie

            def load():
                t = tokie.Tokenizer.from_json(str(path))
                t.no_padding()
                t.no_truncation()
                return t

            return Peer(
                "tokie",
                load,
                lambda t, s: t.encode(s, add_special_tokens=False),
                lambda r: r.ids,
            )

        def kitoken_peer():
            import kitoken

            return Peer(
                "kitoken",
                lambda: kitoken.Kitoken.from_tokenizers_file(str(path)),
                lambda k, s: k.encode(s, False),
            )

        out["tokenizers"] = tokenizers_peer
        out["gigatoken"] = gigatoken_peer
        out["fastokens"] = fastokens_peer
        out["tokie"] = tokie_peer
        out["kitoken"] = kitoken_peer
    elif kind == "tekken":
        path = shared / ref_file

        def mistral_common_peer():
            from mistral_common.tokens.tokenizers.tekken import Tekkenizer

            return Peer(
                "mistral-common",
                lambda: Tekkenizer.from_file(str(path)),
                lambda t, s: t.encode(s, bos=False, eos=False),
                reference=True,
            )

        def not_reference(build):
            # The reference stays mistral-common's.
            def peer():
                p = build()
                p.reference = False
                return p

            return peer

        out["mistral-common"] = mistral_common_peer
        for label, build in peer_builders(name, "hf", shared, TEKKEN_JSON_PEER, None).items():
            out[label] = not_reference(build)
    elif kind == "spm":
        path = shared / ref_file

        def sentencepiece_peer():
            import sentencepiece

            return Peer(
                "sentencepiece",
                lambda: sentencepiece.SentencePieceProcessor(model_file=str(path)),
                lambda sp, s: sp.EncodeAsIds(s),
                reference=True,
            )

        def gigatoken_peer():
            import gigatoken

            return Peer(
                "gigatoken",
                lambda: gigatoken.Tokenizer.from_sentencepiece(path),
                lambda g, s: g.encode(s),
            )

        def kitoken_peer():
            import kitoken

            return Peer(
                "kitoken",
                lambda: kitoken.Kitoken.from_sentencepiece_file(str(path)),
                lambda k, s: k.encode(s, False),
            )

        out["sentencepiece"] = sentencepiece_peer
        out["gigatoken"] = gigatoken_peer
        out["kitoken"] = kitoken_peer
    return out


def peers_for(name, kind, shared, crate_source, ref_file):
    """Every peer that loads this tokenizer, the reference first, built in
    this process (the `--shifted` and `--unseen` protocols)."""
    out = []
    for label, build in peer_builders(name, kind, shared, crate_source, ref_file).items():
        try:
            out.append(build())
        except Exception as e:  # noqa: BLE001
            print(f"  {name}: {label} unavailable: {e}", file=sys.stderr)
    return out


def crate_run(binary, source, path, rounds, shared, shift):
    env = dict(os.environ, RAYON_NUM_THREADS="1", RTOK_SHARED_DIR=str(shared))
    if source.startswith("fixtures/"):
        source = str(shared / source)
    out = subprocess.run(
        [str(binary), source, str(path), str(rounds), str(shift)],
        env=env, check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout)


def timed(fn, *args):
    """(result, wall ms, process CPU ms) of one call, with the collector off."""
    gc.disable()
    try:
        c0, t0 = time.process_time(), time.perf_counter()
        result = fn(*args)
        t1, c1 = time.perf_counter(), time.process_time()
    finally:
        gc.enable()
    return result, (t1 - t0) * 1e3, (c1 - c0) * 1e3


def run_cell(name, source, peers, path, rounds, binary, shared, unseen=False):
    text = read_text(path)
    # --unseen: rounds + 1 disjoint slices, so every timed round is text
    # the tokenizer has not seen (its word cache answers only what recurs).
    shift = len(text) // (rounds + 2) if unseen else SHIFT
    keep = len(text) - (rounds + 1) * shift
    slices = [text[r * shift : r * shift + keep] for r in range(rounds + 1)]
    nbytes = len(slices[0].encode())
    crate = {"times_ms": [], "load_ms": [], "first_encode_ms": [], "warm_up_ms": []}
    state = {p.label: {"times_ms": [], "cpu_ms": 0.0, "wall_ms": 0.0} for p in peers}
    objects = {}
    for block in range(2):
        run = crate_run(binary, source, path, rounds, shared, shift)
        if run["bytes"] != nbytes:
            sys.exit(f"{name}/{path.name}: the crate saw {run['bytes']} bytes, the peers {nbytes}")
        for key in ("load_ms", "first_encode_ms", "warm_up_ms"):
            crate[key].append(run[key])
        crate["times_ms"] += run["times_ms"]
        crate["ids_sha256"], crate["tokens"] = run["ids_sha256"], run["tokens"]
        for peer in peers if block == 0 else reversed(peers):
            st = state[peer.label]
            if peer.error is not None:
                st["error"] = peer.error
                continue
            if block == 0:
                gc.collect()
                try:
                    objects[peer.label], st["load_ms"], _ = timed(peer.load)
                    first, st["first_encode_ms"], _ = timed(peer.encode, objects[peer.label], slices[0])
                    st["ids_sha256"] = ids_sha256(peer.ids(first))
                    del first
                except (Exception, BaseException) as e:  # noqa: BLE001 (pyo3 panics are BaseException)
                    if isinstance(e, (KeyboardInterrupt, SystemExit)):
                        raise
                    # A peer that cannot load (or encode) this tokenizer is
                    # reported as failing and not tried again on it.
                    peer.error = st["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                    print(f"  {name}: {peer.label} fails: {peer.error}", file=sys.stderr)
                    continue
            obj = objects[peer.label]
            for s in slices[1:]:
                result, wall, cpu = timed(peer.encode, obj, s)
                del result
                st["times_ms"].append(wall)
                st["wall_ms"] += wall
                st["cpu_ms"] += cpu
    objects.clear()
    gc.collect()
    ref = next(p.label for p in peers if p.reference)
    ref_hash = state[ref]["ids_sha256"]

    if "error" in state[ref]:
        sys.exit(f"{name}: the reference {ref} fails: {state[ref]['error']}")

    def summary(times, sha, **extra):
        return {"mb_s": nbytes / 1e3 / statistics.median(times), "exact": sha == ref_hash, **extra}

    return {
        "tokenizer": name,
        "corpus": path.stem.rsplit("-", 1)[0],
        "bytes": nbytes,
        "tokens": crate["tokens"],
        "reference": ref,
        "crate": summary(
            crate["times_ms"],
            crate["ids_sha256"],
            load_ms=statistics.median(crate["load_ms"]),
            first_encode_ms=statistics.median(crate["first_encode_ms"]),
            warm_up_ms=statistics.median(crate["warm_up_ms"]),
        ),
        "peers": {
            label: {"error": st["error"], "exact": False}
            if "error" in st
            else summary(
                st["times_ms"],
                st["ids_sha256"],
                load_ms=st["load_ms"],
                first_encode_ms=st["first_encode_ms"],
                # CPU over wall time, judged only where the rounds took 20 ms or more.
                cores=st["cpu_ms"] / st["wall_ms"] if st["wall_ms"] >= 20 else 0.0,
            )
            for label, st in state.items()
        },
    }


def git(*args):
    try:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def crate_commit():
    """The checkout's commit (taken when the run starts: the binary is built from it)."""
    return git("rev-parse", "--short", "HEAD") + ("+dirty" if git("status", "--porcelain", "-uno") else "")


def machine_line(started, commit, load_before, load_after, cpu):
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or platform.machine(),
    ) if pathlib.Path("/proc/cpuinfo").exists() else platform.machine()

    def version(pkg):
        try:
            return f"{pkg} {importlib.metadata.version(pkg)}"
        except importlib.metadata.PackageNotFoundError:
            return f"{pkg} (absent)"

    try:
        rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.split()[1]
    except (OSError, IndexError):
        rustc = "?"
    fmt = lambda la: "/".join(f"{x:.2f}" for x in la)  # noqa: E731
    pinned = f", pinned to core {cpu}" if cpu is not None else ""
    return (
        f"Machine: {model}, {os.cpu_count()} cores{pinned}; load average (1/5/15 min) "
        f"{fmt(load_before)} before, {fmt(load_after)} after; run started {time.strftime('%Y-%m-%d %H:%M UTC', started)}. "
        f"Versions: router-tokenizer {commit} (rustc {rustc}), Python {platform.python_version()}, "
        + ", ".join(version(p) for p in PEER_PACKAGES)
        + "."
    )


def fastest_exact(row, key, better):
    """(label, value) of the exact peer that is best on `key`, or None."""
    exact = [(label, p[key]) for label, p in row["peers"].items() if p["exact"]]
    return better(exact, key=lambda lv: lv[1]) if exact else None


def peer_cell(p, key, fmt):
    """One peer's figure in a table, or why there is none."""
    if p is None:
        return "–"
    if "error" in p:
        return "fails"
    return fmt.format(p[key]) + peer_mark(p)


def peer_mark(p):
    marks = [m for m, on in (("inexact", not p["exact"]), ("mt", p["cores"] > 1.3)) if on]
    return f" ({', '.join(marks)})" if marks else ""


def legacy_markdown(rows, labels, machine, argv):
    out = [
        machine,
        "",
        f"Command: `python3 scripts/bench_peers.py {' '.join(argv)}`. "
        "Warm: MB/s (10^6 bytes/s), median of the rounds, single thread. "
        "The last column is this crate over the fastest exact peer (> 1: the crate is faster); "
        "\"inexact\": that peer's ids differ from the reference's and it is not counted.",
        "",
        "| tokenizer | corpus | MB | this crate | " + " | ".join(labels) + " | fastest exact peer | crate ÷ fastest |",
        "|---|---|---:|---:|" + "---:|" * len(labels) + "---|---:|",
    ]
    for r in rows:
        cells = [peer_cell(r["peers"].get(label), "mb_s", "{:.1f}") for label in labels]
        best = fastest_exact(r, "mb_s", max)
        crate = f"{r['crate']['mb_s']:.1f}" + ("" if r["crate"]["exact"] else " (INEXACT)")
        out.append(
            f"| {r['tokenizer']} | {r['corpus']} | {r['bytes'] / 1e6:.3g} | {crate} | "
            + " | ".join(cells)
            + (f" | {best[0]} | {r['crate']['mb_s'] / best[1]:.2f}× |" if best else " | – | – |")
        )
    out += [
        "",
        "Cold start, in ms: `load` is the time to a loaded tokenizer (this crate: in a fresh "
        "process; peers: their load call, median over the cells), then the first encode after "
        "that load for each corpus (this crate: before `warm_up`). The last column is the "
        "fastest exact peer's time over this crate's (> 1: the crate is faster); the crate's "
        "`warm_up` wait (what the load left building in the background) is in brackets.",
        "",
        "| tokenizer | step | this crate | " + " | ".join(labels) + " | fastest exact peer | fastest ÷ crate |",
        "|---|---|---:|" + "---:|" * len(labels) + "---|---:|",
    ]
    by_tok = {}
    for r in rows:
        by_tok.setdefault(r["tokenizer"], []).append(r)
    for tok, trows in by_tok.items():
        exact_everywhere = {
            label for label in trows[0]["peers"] if all(r["peers"][label]["exact"] for r in trows)
        }
        loads = {
            label: statistics.median(r["peers"][label]["load_ms"] for r in trows)
            for label in trows[0]["peers"]
            if all("load_ms" in r["peers"][label] for r in trows)
        }
        crate_load = statistics.median(r["crate"]["load_ms"] for r in trows)
        warm = statistics.median(r["crate"]["warm_up_ms"] for r in trows)
        crate_cell = f"{crate_load:.0f}" + (f" [+{warm:.0f}]" if warm >= 1 else "")
        cells = [
            ("fails" if label in trows[0]["peers"] else "–")
            if label not in loads
            else f"{loads[label]:.0f}" + ("" if label in exact_everywhere else " (inexact)")
            for label in labels
        ]
        exact_loads = [(label, v) for label, v in loads.items() if label in exact_everywhere]
        best = min(exact_loads, key=lambda lv: lv[1]) if exact_loads else None
        out.append(
            f"| {tok} | load | {crate_cell} | " + " | ".join(cells)
            + (f" | {best[0]} | {best[1] / crate_load:.2f}× |" if best else " | – | – |")
        )
        for r in trows:
            cells = [peer_cell(r["peers"].get(label), "first_encode_ms", "{:.1f}") for label in labels]
            best = fastest_exact(r, "first_encode_ms", min)
            first = r["crate"]["first_encode_ms"]
            out.append(
                f"| {tok} | first encode, {r['corpus']} | {first:.1f} | " + " | ".join(cells)
                + (f" | {best[0]} | {best[1] / first:.2f}× |" if best else " | – | – |")
            )
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------
# The default protocol: text seen once (issue #43).
# ---------------------------------------------------------------------------

PIECES = [8 << 10, 64 << 10]
ROUND_BYTES = 256 << 10
SMOKE_PIECE = 8 << 10
SMOKE_ROUND_BYTES = 16 << 10


def kind_bytes(shared, cat):
    """The kind's files, in name order, one after the other (UTF-8)."""
    return b"".join(read_text(p).encode() for p in sorted((shared / "corpus" / cat).iterdir()))


def cut_kind(data, piece, rounds, round_bytes):
    """(warm-up pieces, [round 0's, round 1's, …]) of one kind: runs of
    rounds + 1 adjacent pieces spread evenly over `data`, one of each run to
    the warm-up and one to each round."""
    per_round = max(1, round_bytes // piece)
    runs = min(per_round, len(data) // piece // (rounds + 1))
    if runs < 1:
        sys.exit(f"a kind of {len(data)} bytes holds no {rounds + 1} pieces of {piece} bytes")
    n = runs * (rounds + 1)
    stride = len(data) // n
    pieces = []
    for j in range(n):
        start = j * stride
        while start < len(data) and (data[start] & 0xC0) == 0x80:
            start += 1
        end = min(start + piece, len(data))
        while end < len(data) and (data[end] & 0xC0) == 0x80:
            end -= 1
        pieces.append(data[start:end].decode("utf-8"))
    assert len(set(pieces)) == len(pieces), "pieces repeat"
    warm = pieces[0 :: rounds + 1]
    return warm, [pieces[r + 1 :: rounds + 1] for r in range(rounds)]


def interleave(lists):
    """The lists' items taken in turn: a[0], b[0], …, a[1], b[1], …"""
    out = []
    for i in range(max(len(x) for x in lists)):
        out += [x[i] for x in lists if i < len(x)]
    return out


def build_pieces(shared, piece, rounds, round_bytes, cats, outdir):
    """{kind: path of its pieces file} for one piece size: every asked kind,
    and `mixed` (the six kinds in turn) when asked."""
    outdir.mkdir(parents=True, exist_ok=True)
    cut = {
        cat: cut_kind(kind_bytes(shared, cat), piece, rounds, round_bytes)
        for cat in CATEGORIES
        if cat in cats or MIXED in cats
    }
    if MIXED in cats:
        cut[MIXED] = (
            interleave([cut[c][0] for c in CATEGORIES]),
            [interleave([cut[c][1][r] for c in CATEGORIES]) for r in range(rounds)],
        )
    files = {}
    for cat in cats:
        warm, rounds_ = cut[cat]
        everything = warm + [p for r in rounds_ for p in r]
        assert len(set(everything)) == len(everything), f"{cat}: pieces repeat"
        path = outdir / f"pieces-{cat}-{piece}-r{rounds}-{round_bytes}.json"
        path.write_text(json.dumps({"warm": warm, "rounds": rounds_}, ensure_ascii=False))
        files[cat] = path
    return files


def steady_allocator():
    """glibc's allocator thresholds fixed as `tools/throughput.rs` fixes
    them (`docs/perf/design_log/byte_level.md` (entry 354)): a fresh worker's large blocks then come from
    a heap that its warm-up has already faulted in, as in a process that has
    run a while."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass


def fast_sha256(ids):
    """`ids_sha256` without the struct round trip."""
    if hasattr(ids, "astype"):
        data = ids.astype("<u4").tobytes()
    else:
        a = array.array("I", ids)
        if a.itemsize != 4:
            return ids_sha256(ids)
        if sys.byteorder != "little":
            a.byteswap()
        data = a.tobytes()
    return hashlib.sha256(data).hexdigest()


def worker_main(name, label, pieces_path, shared):
    """One peer in a process of its own: load, warm up, then answer the
    coordinator's commands (`once R`, `again R`, `quit`) on stdin with one
    JSON line each, as `tools/throughput.rs --pieces` does for the crate."""
    steady_allocator()

    def say(obj):
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    def why(e):
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"

    source, kind, ref_file = TOKENIZERS[name]
    try:
        peer = peer_builders(name, kind, shared, source, ref_file)[label]()
    except Exception as e:  # noqa: BLE001
        say({"error": "unavailable: " + why(e)})
        return
    pieces = json.loads(pathlib.Path(pieces_path).read_text())
    warm, rounds = pieces["warm"], pieces["rounds"]
    try:
        gc.collect()
        obj, load_ms, _ = timed(peer.load)
        first, first_ms, _ = timed(peer.encode, obj, warm[0])
        del first
        for p in warm[1:]:
            peer.encode(obj, p)
    except BaseException as e:  # noqa: BLE001 (pyo3 panics are BaseException)
        if isinstance(e, KeyboardInterrupt):
            raise
        say({"error": why(e)})
        return
    say({"load_ms": load_ms, "first_encode_ms": first_ms, "warm_up_ms": 0.0})
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        if words[0] not in ("once", "again") or len(words) != 2:
            say({"error": f"bad command: {line.strip()}"})
            continue
        ms = cpu = 0.0
        hashes, tokens, nbytes = [], 0, 0
        try:
            for p in rounds[int(words[1])]:
                result, wall, c = timed(peer.encode, obj, p)
                ms, cpu = ms + wall, cpu + c
                ids = peer.ids(result)
                del result
                hashes.append(fast_sha256(ids))
                tokens += len(ids)
                nbytes += len(p.encode())
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            say({"error": why(e)})
            return
        say({"ms": ms, "cpu_ms": cpu, "bytes": nbytes, "tokens": tokens, "sha256": hashes})


class WorkerFailed(Exception):
    pass


class Worker:
    """A contender in a process of its own, driven one JSON line at a time."""

    def __init__(self, label, argv, env):
        self.label = label
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True, env=env
        )

    def _reply(self):
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            self.stderr.seek(0)
            tail = self.stderr.read().strip().splitlines()[-1:] or [f"exit status {self.proc.returncode}"]
            raise WorkerFailed(f"died: {tail[0][:200]}")
        reply = json.loads(line)
        if "error" in reply:
            raise WorkerFailed(reply["error"])
        return reply

    def ready(self):
        return self._reply()

    def ask(self, command):
        try:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise WorkerFailed(f"died: {e}") from e
        return self._reply()

    def close(self):
        try:
            if self.proc.poll() is None:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except (BrokenPipeError, OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()


CRATE = "this crate"


def seen_once_cell(name, source, labels, pieces_path, rounds, binary, shared):
    """One cell: every contender in a process of its own, loaded and warmed
    up one after the other, then the rounds interleaved (see the module docs)."""
    env = dict(os.environ, RAYON_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false", RTOK_SHARED_DIR=str(shared))
    crate_source = str(shared / source) if source.startswith("fixtures/") else source
    argvs = {CRATE: [str(binary), "--pieces", crate_source, str(pieces_path)]}
    for label in labels:
        argvs[label] = [
            sys.executable, str(pathlib.Path(__file__).resolve()), "--worker", name, label,
            str(pieces_path), "--shared", str(shared),
        ]
    state = {c: {"once": [], "again2": [], "again3": [], "l0": []} for c in argvs}
    workers = {}
    try:
        for c, argv in argvs.items():
            w = Worker(c, argv, env)
            try:
                state[c].update(w.ready())
                workers[c] = w
            except WorkerFailed as e:
                state[c]["error"] = str(e)
                w.close()
                if c != CRATE:
                    print(f"  {name}: {c}: {e}", file=sys.stderr)

        def ask_all(order, command, key):
            for c in order:
                if c not in workers:
                    continue
                try:
                    state[c][key].append(workers[c].ask(command))
                except WorkerFailed as e:
                    state[c]["error"] = str(e)
                    workers.pop(c).close()
                    print(f"  {name}: {c} fails on `{command}`: {e}", file=sys.stderr)

        for r in range(rounds):
            order = [CRATE] + (labels if r % 2 == 0 else labels[::-1])
            ask_all(order, f"once {r}", "once")
            ask_all(order, f"again {r}", "again2")
            ask_all(order, f"again {r}", "again3")
            ask_all([CRATE], f"l0 {r}", "l0")
    finally:
        for w in workers.values():
            w.close()
    return state


def summarize_cell(name, kind, piece, labels, state, ref):
    """The cell's figures: per contender, median MB/s seen once and seen
    again, exactness, cold start."""
    if "error" in state[CRATE]:
        sys.exit(f"{name}/{kind}: this crate fails: {state[CRATE]['error']}")
    if "error" in state[ref] or len(state[ref]["once"]) == 0:
        sys.exit(f"{name}/{kind}: the reference {ref} fails: {state[ref].get('error')}")
    ref_once = [h for reply in state[ref]["once"] for h in reply["sha256"]]

    def mb_s(replies):
        return statistics.median(r["bytes"] / 1e3 / r["ms"] for r in replies) if replies else None

    def hashes(replies):
        return [h for reply in replies for h in reply["sha256"]]

    out = {}
    for c in [CRATE] + labels:
        st = state[c]
        complete = len(st["once"]) == len(state[ref]["once"])
        if "error" in st and not st["once"]:
            out[c] = {"error": st["error"], "exact": False}
            continue
        wall = sum(r["ms"] for r in st["once"])
        cpu = sum(r["cpu_ms"] for r in st["once"] if r.get("cpu_ms") is not None)
        exact = complete and hashes(st["once"]) == ref_once
        # Seen again: the same ids as seen once (a memo that answered wrongly fails here).
        again_exact = all(
            hashes(st[k]) == ref_once[: len(hashes(st[k]))] for k in ("again2", "again3", "l0")
        )
        cpu_rounds = [r for r in st["once"] if r.get("cpu_ms")]
        out[c] = {
            "mb_s": mb_s(st["once"]),
            # The same in CPU time (this crate: its thread's; a peer: its
            # process's), for a machine that other work shares: JSON only.
            "cpu_mb_s": statistics.median(r["bytes"] / 1e3 / r["cpu_ms"] for r in cpu_rounds)
            if cpu_rounds
            else None,
            "again2_mb_s": mb_s(st["again2"]),
            "again3_mb_s": mb_s(st["again3"]),
            "l0_mb_s": mb_s(st["l0"]),
            "exact": exact,
            "again_exact": exact and again_exact,
            "cores": cpu / wall if wall >= 20 else 0.0,
            "load_ms": st["load_ms"],
            "first_encode_ms": st["first_encode_ms"],
            "warm_up_ms": st.get("warm_up_ms", 0.0),
            **({"error": st["error"]} if "error" in st else {}),
        }
    once = state[ref]["once"]
    return {
        "tokenizer": name,
        "corpus": kind,
        "piece": piece,
        "pieces_per_round": len(once[0]["sha256"]),
        "bytes_per_round": statistics.median(r["bytes"] for r in once),
        "tokens_per_round": statistics.median(r["tokens"] for r in once),
        "warm_bytes": state[CRATE].get("warm_bytes"),
        "reference": ref,
        "crate": out[CRATE],
        "peers": {label: out[label] for label in labels},
    }


def size_label(piece):
    return f"{piece >> 10} KiB" if piece % 1024 == 0 else f"{piece} B"


def fastest_exact_on(row, key, exact_key="exact"):
    """(label, value) of the exact peer with the highest `key`, or None."""
    exact = [
        (label, p[key])
        for label, p in row["peers"].items()
        if p.get(exact_key) and p.get(key) is not None
    ]
    return max(exact, key=lambda lv: lv[1]) if exact else None


def seen_peer_cell(p, key, exact_key="exact"):
    if p is None:
        return "–"
    if p.get(key) is None:
        return "fails" if "error" in p else "–"
    marks = [m for m, on in (("inexact", not p[exact_key]), ("mt", p["cores"] > 1.3)) if on]
    return f"{p[key]:.1f}" + (f" ({', '.join(marks)})" if marks else "")


def summary_table(rows, cats, key, exact_key):
    """Tokenizer × piece rows, a cell per kind: the crate's MB/s and its
    ratio to the fastest exact peer."""
    out = [
        "| tokenizer | piece | " + " | ".join(cats) + " |",
        "|---|---|" + "---:|" * len(cats),
    ]
    cells = {}
    for r in rows:
        cells[(r["tokenizer"], r["piece"], r["corpus"])] = r
    seen = []
    for r in rows:
        if (r["tokenizer"], r["piece"]) not in seen:
            seen.append((r["tokenizer"], r["piece"]))
    for tok, piece in seen:
        line = []
        for cat in cats:
            r = cells.get((tok, piece, cat))
            if r is None:
                line.append("–")
                continue
            crate = r["crate"][key]
            mark = "" if r["crate"][exact_key] else " INEXACT"
            best = fastest_exact_on(r, key, exact_key)
            ratio = f" ({crate / best[1]:.2f}× {best[0]})" if best else " (no exact peer)"
            line.append(f"{crate:.1f}{mark}{ratio}")
        out.append(f"| {tok} | {size_label(piece)} | " + " | ".join(line) + " |")
    return out


def seen_once_markdown(rows, labels, machine, argv):
    cats = [c for c in CATEGORIES + [MIXED] if any(r["corpus"] == c for r in rows)]
    out = [
        machine,
        "",
        f"Command: `python3 scripts/bench_peers.py {' '.join(argv)}`.",
        "",
        "## Text seen once",
        "",
        "Distinct pieces of real text, each encoded exactly once, after a warm-up on other "
        "pieces of the same kinds (word caches warm; no memo of whole lines or texts can "
        "answer); every contender single-threaded, in a process of its own, pinned to one "
        "core; median of the interleaved rounds of MB/s (10^6 bytes/s). A cell is this "
        "crate's MB/s and, in brackets, this crate over the fastest exact peer (> 1: the "
        "crate is faster). `mixed`: the six kinds' pieces in turn.",
        "",
        *summary_table(rows, cats, "mb_s", "exact"),
        "",
        "Every contender, text seen once (MB/s; \"inexact\": that peer's ids differ from the "
        "reference's on some piece and it is not counted; \"fails\": it cannot load or encode "
        "this tokenizer; \"–\": it does not read this kind of file):",
        "",
        "| tokenizer | piece | corpus | KB a round | this crate | " + " | ".join(labels)
        + " | fastest exact peer | crate ÷ fastest |",
        "|---|---|---|---:|---:|" + "---:|" * len(labels) + "---|---:|",
    ]
    for r in rows:
        best = fastest_exact_on(r, "mb_s")
        crate = f"{r['crate']['mb_s']:.1f}" + ("" if r["crate"]["exact"] else " (INEXACT)")
        out.append(
            f"| {r['tokenizer']} | {size_label(r['piece'])} | {r['corpus']} | "
            f"{r['bytes_per_round'] / 1e3:.0f} ({r['pieces_per_round']}) | {crate} | "
            + " | ".join(seen_peer_cell(r["peers"].get(label), "mb_s") for label in labels)
            + (f" | {best[0]} | {r['crate']['mb_s'] / best[1]:.2f}× |" if best else " | – | – |")
        )
    out += [
        "",
        "## Text seen again (not the headline)",
        "",
        "The same pieces encoded again right after their seen-once round: the figure is the "
        "3rd sighting (seen once, then twice more), for every contender. What answers this "
        "crate here is inside its backend, per thread: its word caches. The handle's L0/L1 prompt caches are not involved: `encode_sequential` never "
        "consults them. \"crate, 2nd\" is the 2nd sighting; \"L0 hit\" is the handle's L0 prompt "
        "cache (on by default, it stores a text on its second miss) answering "
        "`Tokenizer::encode` with a copy of stored ids.",
        "",
        *summary_table(rows, cats, "again3_mb_s", "again_exact"),
        "",
        "| tokenizer | piece | corpus | crate, 2nd | this crate | L0 hit | " + " | ".join(labels)
        + " | fastest exact peer | crate ÷ fastest |",
        "|---|---|---|---:|---:|---:|" + "---:|" * len(labels) + "---|---:|",
    ]
    for r in rows:
        best = fastest_exact_on(r, "again3_mb_s", "again_exact")
        c = r["crate"]
        crate = f"{c['again3_mb_s']:.1f}" + ("" if c["again_exact"] else " (INEXACT)")
        out.append(
            f"| {r['tokenizer']} | {size_label(r['piece'])} | {r['corpus']} | "
            f"{c['again2_mb_s']:.1f} | {crate} | {c['l0_mb_s']:.0f} | "
            + " | ".join(
                seen_peer_cell(r["peers"].get(label), "again3_mb_s", "again_exact") for label in labels
            )
            + (f" | {best[0]} | {c['again3_mb_s'] / best[1]:.2f}× |" if best else " | – | – |")
        )
    out += [
        "",
        "## Cold start",
        "",
        "ms, medians over the tokenizer's cells: `load` is the load call in a fresh process; "
        "`first encode` the first warm-up piece right after it (this crate: before `warm_up`; "
        "its wait for what the load left building in the background is in brackets).",
        "",
        "| tokenizer | step | this crate | " + " | ".join(labels) + " |",
        "|---|---|---:|" + "---:|" * len(labels),
    ]
    by_tok = {}
    for r in rows:
        by_tok.setdefault(r["tokenizer"], []).append(r)
    for tok, trows in by_tok.items():

        def med(label, key, trows=trows):
            vals = [
                (r["crate"] if label == CRATE else r["peers"][label]).get(key)
                for r in trows
                if label == CRATE or label in r["peers"]
            ]
            vals = [v for v in vals if v is not None]
            return statistics.median(vals) if vals else None

        def cell(label, key):
            if label != CRATE and not any(label in r["peers"] for r in trows):
                return "–"
            v = med(label, key)
            return "fails" if v is None else f"{v:.0f}" if key == "load_ms" else f"{v:.1f}"

        warm = med(CRATE, "warm_up_ms") or 0.0
        out.append(
            f"| {tok} | load | {cell(CRATE, 'load_ms')}"
            + (f" [+{warm:.0f}]" if warm >= 1 else "")
            + " | " + " | ".join(cell(label, "load_ms") for label in labels) + " |"
        )
        for piece in sorted({r["piece"] for r in trows}):
            prow = [r for r in trows if r["piece"] == piece]
            line = []
            for label in [CRATE] + labels:
                if label != CRATE and not any(label in r["peers"] for r in prow):
                    line.append("–")
                    continue
                vals = [
                    (r["crate"] if label == CRATE else r["peers"][label]).get("first_encode_ms")
                    for r in prow
                ]
                vals = [v for v in vals if v is not None]
                line.append(f"{statistics.median(vals):.2f}" if vals else "fails")
            out.append(f"| {tok} | first encode, {size_label(piece)} | " + " | ".join(line) + " |")
    return "\n".join(out) + "\n"


def run_seen_once(args, names, cats, shared, binary):
    pieces = args.piece
    files = {
        piece: build_pieces(shared, piece, args.rounds, args.round_bytes, cats, ROOT / "target/bench-peers")
        for piece in pieces
    }
    rows, labels = [], []
    for name in names:
        source, kind, ref_file = TOKENIZERS[name]
        tok_labels = list(peer_builders(name, kind, shared, source, ref_file))
        ref = tok_labels[0]
        labels += [label for label in tok_labels if label not in labels]
        for piece in pieces:
            for cat in cats:
                state = seen_once_cell(name, source, tok_labels, files[piece][cat], args.rounds, binary, shared)
                row = summarize_cell(name, cat, piece, tok_labels, state, ref)
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows, labels


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        wp = argparse.ArgumentParser(prog="bench_peers.py --worker")
        wp.add_argument("name")
        wp.add_argument("label")
        wp.add_argument("pieces")
        wp.add_argument("--shared", required=True)
        w = wp.parse_args(sys.argv[2:])
        worker_main(w.name, w.label, w.pieces, pathlib.Path(w.shared))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shared", default=os.environ.get("RTOK_SHARED_DIR", str(ROOT.parent / "shared")))
    ap.add_argument(
        "--piece",
        default=",".join(str(p) for p in PIECES),
        help="piece sizes in bytes, comma-separated (default 8192,65536: a cell each)",
    )
    ap.add_argument(
        "--round-bytes",
        type=int,
        default=ROUND_BYTES,
        help="text a timed round encodes, per kind (default 262144; fewer pieces where a kind is short)",
    )
    ap.add_argument("--rounds", type=int, help="timed rounds (default 3; --shifted and --unseen: 5)")
    ap.add_argument("--only", default="", help="comma-separated tokenizer names: " + ",".join(TOKENIZERS))
    ap.add_argument("--categories", default=",".join(CATEGORIES + [MIXED]))
    ap.add_argument(
        "--shifted",
        action="store_true",
        help="the older protocol: one file per category, slices shifted by 7 chars (text seen again)",
    )
    ap.add_argument(
        "--unseen",
        action="store_true",
        help="the older protocol with disjoint slices of a file (rounds + 2) * --bytes long",
    )
    ap.add_argument("--bytes", type=int, default=1 << 20, help="--shifted/--unseen: bytes per category file")
    ap.add_argument("--cpu", type=int, help="pin this process and every contender to this core (default: the last allowed)")
    ap.add_argument("--no-pin", action="store_true", help="leave every contender to the scheduler")
    ap.add_argument("--markdown", nargs="?", const="-", help="write the tables (to FILE, else stdout)")
    ap.add_argument("--json", help="write every cell's figures to FILE")
    ap.add_argument(
        "--smoke",
        action="store_true",
        help=f"8 KiB pieces, 16 KiB rounds, 1 round, {SMOKE_TOKENIZERS} on {SMOKE_CATEGORIES} "
        "(--shifted/--unseen: 4 KiB files); a check that it runs",
    )
    args = ap.parse_args()
    legacy = args.shifted or args.unseen
    if args.rounds is None:
        args.rounds = 5 if legacy else 3
    try:
        args.piece = [int(p) for p in args.piece.split(",") if p]
    except ValueError:
        sys.exit("--piece takes byte counts, comma-separated")
    if args.smoke:
        args.bytes, args.rounds = 4096, 1
        if args.piece == PIECES:
            args.piece = [SMOKE_PIECE]
        if args.round_bytes == ROUND_BYTES:
            args.round_bytes = SMOKE_ROUND_BYTES
        args.only = args.only or SMOKE_TOKENIZERS
        if args.categories == ap.get_default("categories"):
            args.categories = SMOKE_CATEGORIES
    if args.rounds < 1 or args.bytes < 1 or args.round_bytes < 1 or not args.piece or min(args.piece) < 16:
        sys.exit("--rounds, --bytes, --round-bytes and --piece must be positive (pieces of 16 bytes or more)")
    if args.no_pin:
        args.cpu = None
    elif args.cpu is None:
        args.cpu = max(os.sched_getaffinity(0))
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    shared = pathlib.Path(args.shared).resolve()
    binary = ROOT / "target/release/throughput"
    if not binary.exists():
        sys.exit("build it first: cargo build --release --features tools --bin throughput")
    names = [n for n in args.only.split(",") if n] or list(TOKENIZERS)
    cats = [c for c in args.categories.split(",") if c]
    unknown = [n for n in names if n not in TOKENIZERS] + [c for c in cats if c not in CATEGORIES + [MIXED]]
    if unknown:
        sys.exit(f"unknown tokenizer or category: {', '.join(unknown)}")
    started, commit, load_before = time.gmtime(), crate_commit(), os.getloadavg()
    if legacy:
        size = args.bytes * (args.rounds + 2) if args.unseen else args.bytes
        inputs = build_inputs(shared, size, ROOT / "target/bench-peers", cats)
        rows, labels = [], []
        for name in names:
            source, kind, ref_file = TOKENIZERS[name]
            peers = peers_for(name, kind, shared, source, ref_file)
            labels += [p.label for p in peers if p.label not in labels]
            for cat in cats:
                row = run_cell(name, source, peers, inputs[cat], args.rounds, binary, shared, args.unseen)
                rows.append(row)
                print(json.dumps(row), flush=True)
    else:
        rows, labels = run_seen_once(args, names, cats, shared, binary)
    load_after = os.getloadavg()
    machine = machine_line(started, commit, load_before, load_after, args.cpu)
    if args.markdown != "-":
        print(machine, flush=True)
    order = [label for label in PEER_PACKAGES if label in labels]
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"machine": machine, "rows": rows}, indent=1))
    if args.markdown:
        render = legacy_markdown if legacy else seen_once_markdown
        table = render(rows, order, machine, sys.argv[1:])
        if args.markdown == "-":
            print("\n" + table, end="")
        else:
            pathlib.Path(args.markdown).write_text(table)
    wrong = [f"{r['tokenizer']}/{r['corpus']}" for r in rows if not r["crate"]["exact"]]
    if not legacy:
        wrong += [
            f"{r['tokenizer']}/{r['corpus']}/{size_label(r['piece'])} (seen again)"
            for r in rows
            if r["crate"]["exact"] and not r["crate"]["again_exact"]
        ]
    if wrong:
        print(f"this crate's ids differ from the reference on: {', '.join(wrong)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
