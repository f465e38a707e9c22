#!/usr/bin/env python3
"""Writes the compact rank tables the crate embeds for the built-in tiktoken
encodings (`src/backend/tiktoken/embedded/*.ranks`) from tiktoken's own rank
files, as shipped in `shared/fixtures/tiktoken/` (the files `tiktoken` and
`tiktoken-rs` read).

    python3 scripts/make_embedded_ranks.py [--shared ../shared]

Format (DESIGN.md invariant `ids-equal-reference`): for every rank `0..bound`, one byte holding the
token's length (0 where the file has no token of that rank: p50k skips 50256,
its `<|endoftext|>`), then every token's bytes in rank order. Every token is
1..=128 bytes. `tests` compare the loaded tables with `tiktoken-rs`' on every
rank (`embedded_ranks_equal_tiktoken_rs`).
"""

import argparse
import base64
import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
NAMES = ["r50k_base", "p50k_base", "cl100k_base", "o200k_base"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.environ.get("RTOK_SHARED_DIR", str(ROOT.parent / "shared")))
    args = ap.parse_args()
    out_dir = ROOT / "src/backend/tiktoken/embedded"
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in NAMES:
        path = pathlib.Path(args.shared) / "fixtures/tiktoken" / f"{name}.tiktoken"
        by_rank = {}
        for line in path.read_bytes().splitlines():
            if not line.strip():
                continue
            token, rank = line.split()
            rank = int(rank)
            assert rank not in by_rank, f"{name}: duplicate rank {rank}"
            by_rank[rank] = base64.b64decode(token)
        bound = max(by_rank) + 1
        lens = bytearray()
        body = bytearray()
        for rank in range(bound):
            token = by_rank.get(rank, b"")
            assert len(token) <= 128, f"{name}: rank {rank} is {len(token)} bytes"
            lens.append(len(token))
            body += token
        (out_dir / f"{name}.ranks").write_bytes(bytes(lens) + bytes(body))
        print(f"{name}: {len(by_rank)} tokens, bound {bound}, {len(lens) + len(body)} bytes")


if __name__ == "__main__":
    main()
