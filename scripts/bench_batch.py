#!/usr/bin/env python3
"""Batch encode throughput over every core: this crate's `encode_batch` against the peers' batch calls.

    pip install tiktoken==0.14.0 tokenizers==0.23.3 gigatoken==0.10.0 fastokens==0.3.5 \
        riptoken==0.2.4 tokie==0.1.4
    cargo build --release --features tools --bin throughput
    python3 scripts/bench_batch.py [--only llama3,o200k_base] [--categories en-prose,code,zh] \
        [--piece 8192] [--round-bytes 1048576] [--rounds 3] [--threads N] [--markdown [FILE]]

The workload of issue #43's item 4: many distinct prompts at once (BlockBPE's high-batch
case), each seen once. The pieces are `scripts/bench_peers.py`'s (distinct pieces of
`shared/corpus`, `cut_kind`); a round is one batch of `--round-bytes` of them (1 MiB: 128
pieces of 8 KiB).

- Every contender runs in a process of its own, with every core (`--threads`, default all
  this process may use): `RAYON_NUM_THREADS` for this crate, `tokenizers` and the rayon
  peers, `num_threads` for tiktoken's `encode_ordinary_batch`, and `TOKENIZERS_PARALLELISM`
  on. Nothing is pinned.
- Warm-up: the load, then the warm-up pieces through the same batch call, so every pool
  thread's word cache is warm on other text of the same kind.
- Timed: round r is one batch call (wall time), rounds interleaved over the contenders (this
  crate first, the peers in one order, the next round in the reverse order); the figure is
  the median over `--rounds` of MB/s (10^6 bytes per second).
- Exactness: each piece's ids are hashed (sha256 of little-endian u32s) and compared with the
  reference's (tiktoken, tokenizers); a peer that differs is marked inexact and never counts
  as the fastest exact peer; if this crate differs the script exits with status 1.

This crate's batch call is `Tokenizer::encode_batch` (the handle: the L0 cache is consulted
and misses, as it does for a prompt seen once).
"""

import argparse
import importlib.util
import json
import os
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bench_peers", ROOT / "scripts/bench_peers.py")
bp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bp)

CRATE = bp.CRATE


def batch_call(label, threads):
    """The peer's batch call: (obj, texts) -> a list of id sequences."""
    if label == "tiktoken":
        return lambda e, texts: e.encode_ordinary_batch(texts, num_threads=threads)
    if label == "riptoken":
        return lambda e, texts: e.encode_ordinary_batch(texts)
    if label == "gigatoken":
        return lambda g, texts: g.encode_batch(texts, parallel=True)
    if label in ("fastokens", "tokie"):
        return lambda f, texts: [r.ids for r in f.encode_batch(texts, add_special_tokens=False)]
    if label == "tokenizers":
        return lambda t, texts: [r.ids for r in t.encode_batch(texts, add_special_tokens=False)]
    return None


def worker_main(name, label, pieces_path, shared, threads):
    """One peer in a process of its own: load, warm up through its batch call, then answer
    `batch R` / `quit` on stdin with one JSON line each, as `throughput --pieces` does."""
    bp.steady_allocator()

    def say(obj):
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    source, kind, ref_file = bp.TOKENIZERS[name]
    call = batch_call(label, threads)
    if call is None:
        say({"error": "no batch call"})
        return
    try:
        peer = bp.peer_builders(name, kind, shared, source, ref_file)[label]()
        obj = peer.load()
        pieces = json.loads(pathlib.Path(pieces_path).read_text())
        call(obj, pieces["warm"])
    except BaseException as e:  # noqa: BLE001 (pyo3 panics are BaseException)
        if isinstance(e, KeyboardInterrupt):
            raise
        say({"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"})
        return
    say({"ready": True})
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        texts = pieces["rounds"][int(words[1])]
        start = time.perf_counter()
        out = call(obj, texts)
        ms = (time.perf_counter() - start) * 1e3
        hashes = [bp.fast_sha256(ids) for ids in out]
        say({"ms": ms, "bytes": sum(len(t.encode()) for t in texts), "sha256": hashes})


def cell(name, source, labels, pieces_path, rounds, binary, shared, threads):
    env = dict(
        os.environ,
        RAYON_NUM_THREADS=str(threads),
        TOKENIZERS_PARALLELISM="true",
        RTOK_SHARED_DIR=str(shared),
    )
    crate_source = str(shared / source) if source.startswith("fixtures/") else source
    argvs = {CRATE: [str(binary), "--pieces", crate_source, str(pieces_path)]}
    for label in labels:
        argvs[label] = [
            sys.executable, str(pathlib.Path(__file__).resolve()), "--worker", name, label,
            str(pieces_path), "--shared", str(shared), "--threads", str(threads),
        ]
    state = {c: {"batch": []} for c in argvs}
    workers = {}
    try:
        for c, argv in argvs.items():
            w = bp.Worker(c, argv, env)
            try:
                w.ready()
                if c == CRATE:
                    w.ask("warm_batch")
                workers[c] = w
            except bp.WorkerFailed as e:
                state[c]["error"] = str(e)
                w.close()
                print(f"  {name}: {c}: {e}", file=sys.stderr)
        for r in range(rounds):
            order = [CRATE] + (labels if r % 2 == 0 else labels[::-1])
            for c in order:
                if c in workers:
                    try:
                        state[c]["batch"].append(workers[c].ask(f"batch {r}"))
                    except bp.WorkerFailed as e:
                        state[c]["error"] = str(e)
                        workers.pop(c).close()
    finally:
        for w in workers.values():
            w.close()
    return state


def summarize(name, cat, labels, state, ref):
    want = [h for reply in state[ref]["batch"] for h in reply["sha256"]] if state[ref]["batch"] else None
    row = {"tokenizer": name, "corpus": cat}
    for c in [CRATE] + labels:
        replies = state[c]["batch"]
        if not replies:
            row[c] = {"error": state[c].get("error", "no result")}
            continue
        got = [h for reply in replies for h in reply["sha256"]]
        row[c] = {
            "mb_s": statistics.median(r["bytes"] / r["ms"] / 1e3 for r in replies),
            "exact": want is not None and got == want,
        }
    return row


def markdown(rows, labels, machine, threads):
    cats = list(dict.fromkeys(r["corpus"] for r in rows))
    out = [f"Batch encode, {threads} threads, text seen once ({machine})", ""]
    out.append("| tokenizer | " + " | ".join(cats) + " |")
    out.append("|---|" + "---:|" * len(cats))
    for name in dict.fromkeys(r["tokenizer"] for r in rows):
        cells = []
        for cat in cats:
            row = next(r for r in rows if r["tokenizer"] == name and r["corpus"] == cat)
            mine = row[CRATE].get("mb_s")
            best = max(
                ((row[c]["mb_s"], c) for c in labels if row.get(c, {}).get("exact")),
                default=None,
            )
            if mine is None:
                cells.append("error")
            elif best:
                cells.append(f"{mine:.0f} vs {best[1]} {best[0]:.0f} ({mine / best[0]:.2f}×)")
            else:
                cells.append(f"{mine:.0f}")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    out += ["", "Every contender (MB/s, median; * inexact):", ""]
    for r in rows:
        parts = []
        for c in [CRATE] + labels:
            v = r.get(c, {})
            if "mb_s" in v:
                parts.append(f"{c} {v['mb_s']:.0f}{'' if v['exact'] or c == CRATE else '*'}")
        out.append(f"- {r['tokenizer']} / {r['corpus']}: " + ", ".join(parts))
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        wp = argparse.ArgumentParser(prog="bench_batch.py --worker")
        wp.add_argument("name")
        wp.add_argument("label")
        wp.add_argument("pieces")
        wp.add_argument("--shared", required=True)
        wp.add_argument("--threads", type=int, required=True)
        w = wp.parse_args(sys.argv[2:])
        worker_main(w.name, w.label, w.pieces, pathlib.Path(w.shared), w.threads)
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shared", default=os.environ.get("RTOK_SHARED_DIR", str(ROOT.parent / "shared")))
    ap.add_argument("--only", default="llama3,qwen3,o200k_base")
    ap.add_argument("--categories", default="en-prose,code,zh")
    ap.add_argument("--piece", type=int, default=8192)
    ap.add_argument("--round-bytes", type=int, default=1 << 20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--markdown", nargs="?", const="-")
    args = ap.parse_args()
    shared = pathlib.Path(args.shared).resolve()
    binary = ROOT / "target/release/throughput"
    if not binary.exists():
        sys.exit("build it first: cargo build --release --features tools --bin throughput")
    names = [n for n in args.only.split(",") if n]
    cats = [c for c in args.categories.split(",") if c]
    unknown = [n for n in names if n not in bp.TOKENIZERS] + [c for c in cats if c not in bp.CATEGORIES]
    if unknown:
        sys.exit(f"unknown tokenizer or category: {', '.join(unknown)}")
    files = bp.build_pieces(shared, args.piece, args.rounds, args.round_bytes, cats, ROOT / "target/bench-batch")
    started, load_before = time.gmtime(), os.getloadavg()
    rows, labels = [], []
    for name in names:
        source, kind, ref_file = bp.TOKENIZERS[name]
        tok_labels = [
            label for label in bp.peer_builders(name, kind, shared, source, ref_file) if batch_call(label, 1)
        ]
        labels += [label for label in tok_labels if label not in labels]
        for cat in cats:
            state = cell(name, source, tok_labels, files[cat], args.rounds, binary, shared, args.threads)
            row = summarize(name, cat, tok_labels, state, tok_labels[0])
            rows.append(row)
            print(json.dumps(row), flush=True)
    machine = (
        f"{time.strftime('%Y-%m-%d %H:%M UTC', started)}, commit {bp.crate_commit()}, "
        f"{os.cpu_count()} cores, load {load_before[0]:.1f} → {os.getloadavg()[0]:.1f}"
    )
    table = markdown(rows, labels, machine, args.threads)
    if args.markdown and args.markdown != "-":
        pathlib.Path(args.markdown).write_text(table)
    else:
        print("\n" + table, end="")
    wrong = [f"{r['tokenizer']}/{r['corpus']}" for r in rows if not r[CRATE].get("exact")]
    if wrong:
        print(f"this crate's ids differ from the reference on: {', '.join(wrong)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
