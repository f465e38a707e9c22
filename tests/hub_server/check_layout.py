#!/usr/bin/env python3
"""Reads caches that tests/it/hub_download.rs filled through the local hub server with
Python huggingface_hub, and checks they are laid out as huggingface_hub lays them out.

Usage: python3 tests/hub_server/check_layout.py target/tmp/hub-download/cold-*  (huggingface_hub >= 0.20)

For every repo in each cache: `scan_cache_dir` must report no warnings (corrupted
or unknown entries), and `try_to_load_from_cache` must find every snapshot file
at refs/main with the same bytes.
"""
import pathlib
import sys

from huggingface_hub import scan_cache_dir, try_to_load_from_cache

failures = 0
for cache in map(pathlib.Path, sys.argv[1:]):
    info = scan_cache_dir(cache)
    for warning in info.warnings:
        print(f"{cache}: warning: {warning}")
        failures += 1
    for repo in info.repos:
        for revision in repo.revisions:
            for f in revision.files:
                found = try_to_load_from_cache(repo.repo_id, f.file_name, cache_dir=cache)
                same = isinstance(found, str) and pathlib.Path(found).read_bytes() == f.blob_path.read_bytes()
                print(f"{cache.name}: {repo.repo_id} {revision.commit_hash[:8]} {f.file_name} "
                      f"refs={sorted(revision.refs)} blob={f.blob_path.name[:12]} found={'yes' if same else 'NO'}")
                failures += 0 if same else 1
print("huggingface_hub read every file" if failures == 0 else f"{failures} problems")
sys.exit(1 if failures else 0)
