#!/usr/bin/env python3
"""Single-thread encode throughput and cold start of this crate against the Python peers.

    pip install tiktoken==0.14.0 tokenizers==0.23.3 sentencepiece==0.2.3 \
        gigatoken==0.10.0 fastokens==0.3.5 riptoken==0.2.4
    cargo build --release --example throughput
    python3 scripts/bench_peers.py [--shared ../shared] [--bytes 1048576] [--rounds 5] \
        [--only o200k_base,llama3] [--categories en-prose,zh,mixed] [--cpu 1] \
        [--markdown [FILE]] [--json FILE]
    python3 scripts/bench_peers.py --smoke   # 4 KiB, 1 round, 2 tokenizers, 2 inputs

Inputs: one file per corpus category, its files of `shared/corpus/<category>/`
concatenated in name order up to `--bytes` (cut on a character boundary;
math has only 590 KB), plus `mixed`, the six category files concatenated
(5.8 MB at the default size): the long document of issue #15, where a word
cache sized for one category thrashes.

Method (the one issue #15 describes): slice r is the characters [r*7, r*7 + M)
of the file; the first encode after a load (the warm-up) takes slice 0 and
timed round r slice r, r = 1..rounds, so no whole-input memo answers; medians
over the rounds. `--unseen`: the file is (rounds + 2) times `--bytes` and the
slices are disjoint, so each round is text the tokenizer has not seen, as a
router's prompts mostly are (a word cache then answers only what recurs:
common words, not the clauses of Chinese text, claim 351). Every contender runs single-threaded: RAYON_NUM_THREADS=1, this
crate's `encode_sequential`, the peers' single-text encode, and the process
CPU time of each peer's rounds is checked against their wall time (a peer
that used more than one core is marked "mt"). Everything is pinned to one
core, the last this process may run on or `--cpu N` (`--no-pin` leaves it to
the scheduler): `fastokens` and `gigatoken` start worker threads of their
own, and unpinned on two cores they spent 1.8–2 cores of CPU on one text
(up to 1.2× the pinned speed), while the rounds, under 20 ms, were too short
to mark them. This crate runs in a fresh process per block (`examples/throughput.rs`),
the peers in this one; each cell runs two blocks (crate, then every peer;
crate, then the peers in reverse order), so machine noise spreads over all
of them. Compare ratios from one run, never figures across runs.

Cold start: in the first block of every cell each peer is loaded afresh (its
load call timed, modules imported beforehand) and its first encode (on slice
0, which is also the warm-up) is timed; this crate's are timed inside
each fresh process (load = time to a loaded `Tokenizer`, first encode before
`warm_up`, which waits for what the load left building in the background;
where it waited, slice 0 is encoded once more, untimed, so the engine the
timed rounds use has had its warm-up too).

Exactness: each contender's ids on slice 0 are hashed and compared
with the reference's (tiktoken for encodings and rank files, tokenizers for
tokenizer.json, sentencepiece for .model). A peer whose ids differ is marked
inexact and never counts as the fastest exact peer; if this crate's ids
differ anywhere the script says so and exits with status 1. Timed calls are
the peers' native encode calls; converting their results to a list of ids
(for the hash) is not timed. MB/s are 10^6 bytes per second.
"""

import argparse
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
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")  # read rank files in place, no temp copy

ROOT = pathlib.Path(__file__).resolve().parent.parent
CATEGORIES = ["en-prose", "zh", "code", "multilingual", "structured", "math"]
MIXED = "mixed"
SHIFT = 7
PEER_PACKAGES = ["tiktoken", "riptoken", "gigatoken", "fastokens", "tokenizers", "sentencepiece"]
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
SMOKE_TOKENIZERS = "o200k_base,llama3"
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


def peers_for(name, kind, shared, crate_source, ref_file):
    """Every peer that loads this tokenizer, the reference first; modules are
    imported here so that no load call pays for an import."""
    out = []

    def optional(label, build):
        try:
            out.append(build())
        except Exception as e:  # noqa: BLE001
            print(f"  {name}: {label} unavailable: {e}", file=sys.stderr)

    if kind == "tiktoken":
        import tiktoken
        import tiktoken.load as tl
        import tiktoken_ext.openai_public as op

        path = shared / ref_file

        def tiktoken_params():
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

        params = tiktoken_params()
        pattern, specials = params["pat_str"], params["special_tokens"]
        out.append(
            Peer(
                "tiktoken",
                lambda: tiktoken.Encoding(**tiktoken_params()),
                lambda e, s: e.encode_ordinary(s),
                reference=True,
            )
        )

        def riptoken_peer():
            import riptoken

            return Peer(
                "riptoken",
                lambda: riptoken.CoreBPE(riptoken.load_tiktoken_bpe(path), specials, pattern),
                lambda e, s: e.encode_ordinary(s),
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

        optional("riptoken", riptoken_peer)
        optional("gigatoken", gigatoken_peer)
        optional("fastokens", fastokens_peer)
    elif kind == "hf":
        import tokenizers

        path = snapshot_file(shared, crate_source)

        def load_tokenizers():
            t = tokenizers.Tokenizer.from_file(str(path))
            t.no_padding()
            t.no_truncation()
            return t

        out.append(
            Peer(
                "tokenizers",
                load_tokenizers,
                lambda t, s: t.encode(s, add_special_tokens=False),
                lambda r: r.ids,
                reference=True,
            )
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

        optional("gigatoken", gigatoken_peer)
        optional("fastokens", fastokens_peer)
    elif kind == "spm":
        import sentencepiece

        path = shared / ref_file
        out.append(
            Peer(
                "sentencepiece",
                lambda: sentencepiece.SentencePieceProcessor(model_file=str(path)),
                lambda sp, s: sp.EncodeAsIds(s),
                reference=True,
            )
        )

        def gigatoken_peer():
            import gigatoken

            return Peer(
                "gigatoken",
                lambda: gigatoken.Tokenizer.from_sentencepiece(path),
                lambda g, s: g.encode(s),
            )

        optional("gigatoken", gigatoken_peer)
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


def markdown(rows, labels, machine, argv):
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shared", default=os.environ.get("RTOK_SHARED_DIR", str(ROOT.parent / "shared")))
    ap.add_argument("--bytes", type=int, default=1 << 20, help="bytes per category file")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated tokenizer names: " + ",".join(TOKENIZERS))
    ap.add_argument("--categories", default=",".join(CATEGORIES + [MIXED]))
    ap.add_argument(
        "--unseen",
        action="store_true",
        help="each round a disjoint slice of a file (rounds + 2) * --bytes long: text not seen before",
    )
    ap.add_argument("--cpu", type=int, help="pin this process and the crate's to this core (default: the last allowed)")
    ap.add_argument("--no-pin", action="store_true", help="leave every contender to the scheduler")
    ap.add_argument("--markdown", nargs="?", const="-", help="write the tables (to FILE, else stdout)")
    ap.add_argument("--json", help="write every cell's figures to FILE")
    ap.add_argument(
        "--smoke",
        action="store_true",
        help=f"4 KiB, 1 round, {SMOKE_TOKENIZERS} on {SMOKE_CATEGORIES} (a check that it runs)",
    )
    args = ap.parse_args()
    if args.smoke:
        args.bytes, args.rounds = 4096, 1
        args.only = args.only or SMOKE_TOKENIZERS
        if args.categories == ap.get_default("categories"):
            args.categories = SMOKE_CATEGORIES
    if args.rounds < 1 or args.bytes < 1:
        sys.exit("--rounds and --bytes must be positive")
    if args.no_pin:
        args.cpu = None
    elif args.cpu is None:
        args.cpu = max(os.sched_getaffinity(0))
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    shared = pathlib.Path(args.shared).resolve()
    binary = ROOT / "target/release/examples/throughput"
    if not binary.exists():
        sys.exit("build it first: cargo build --release --example throughput")
    names = [n for n in args.only.split(",") if n] or list(TOKENIZERS)
    cats = [c for c in args.categories.split(",") if c]
    unknown = [n for n in names if n not in TOKENIZERS] + [c for c in cats if c not in CATEGORIES + [MIXED]]
    if unknown:
        sys.exit(f"unknown tokenizer or category: {', '.join(unknown)}")
    size = args.bytes * (args.rounds + 2) if args.unseen else args.bytes
    inputs = build_inputs(shared, size, ROOT / "target/bench-peers", cats)
    started, commit, load_before = time.gmtime(), crate_commit(), os.getloadavg()
    rows, labels = [], []
    for name in names:
        source, kind, ref_file = TOKENIZERS[name]
        peers = peers_for(name, kind, shared, source, ref_file)
        labels += [p.label for p in peers if p.label not in labels]
        for cat in cats:
            row = run_cell(name, source, peers, inputs[cat], args.rounds, binary, shared, args.unseen)
            rows.append(row)
            print(json.dumps(row), flush=True)
    load_after = os.getloadavg()
    machine = machine_line(started, commit, load_before, load_after, args.cpu)
    if args.markdown != "-":
        print(machine, flush=True)
    order = [l for l in PEER_PACKAGES if l in labels]
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"machine": machine, "rows": rows}, indent=1))
    if args.markdown:
        table = markdown(rows, order, machine, sys.argv[1:])
        if args.markdown == "-":
            print("\n" + table, end="")
        else:
            pathlib.Path(args.markdown).write_text(table)
    wrong = [f"{r['tokenizer']}/{r['corpus']}" for r in rows if not r["crate"]["exact"]]
    if wrong:
        print(f"this crate's ids differ from the reference on: {', '.join(wrong)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
