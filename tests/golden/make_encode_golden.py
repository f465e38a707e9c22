#!/usr/bin/env python3
"""Generate tests/golden/encode.json: reference token ids from the Python
reference implementations, for the Rust parity tests of router-tokenizer.

Reference libraries (pinned; the script refuses other versions unless
--allow-other-versions is given):

    pip install tokenizers==0.23.3 tiktoken==0.14.0

Usage (from anywhere):

    python3 tests/golden/make_encode_golden.py            # writes tests/golden/encode.json
    python3 tests/golden/make_encode_golden.py --out X.json --jobs 1

Data comes from the shared directory: $RTOK_SHARED_DIR, default
<repo_root>/../shared (a relative value is taken relative to the repo root,
like the Rust tests do). Nothing is downloaded.

Hashing format (see README.md next to this file):
  * ids:    sha256 over the ids packed as little-endian u32, no header.
  * decode: sha256 over the UTF-8 bytes of the decoded string (HF), or over
            the raw bytes of tiktoken's decode_bytes (tiktoken).
  * input:  sha256 over the raw file bytes; the text is those bytes decoded
            as strict UTF-8 (a BOM stays as U+FEFF, CRLF stays CRLF).

The output is deterministic except for meta.generated (the date; pin it with
--date or SOURCE_DATE_EPOCH).
"""

from __future__ import annotations

import argparse
import array
import datetime as _dt
import hashlib
import json
import multiprocessing as mp
import multiprocessing.connection as mpc
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PINNED = {"tokenizers": "0.23.3", "tiktoken": "0.14.0"}

SCRIPT_DIR = Path(__file__).resolve().parent
REPO_ROOT = SCRIPT_DIR.parent.parent

HF_MODELS = [
    "meta-llama/Meta-Llama-3-8B-Instruct",
    "meta-llama/Llama-3.2-1B-Instruct",
    "mistralai/Mistral-7B-v0.1",
    "mistralai/Mistral-Nemo-Instruct-2407",
    "Qwen/Qwen3-8B",
    "deepseek-ai/DeepSeek-V3",
    "google/gemma-3-4b-it",
    "openai/gpt-oss-20b",
    "CohereForAI/c4ai-command-r-plus",
    "Xenova/gpt-3.5-turbo",
    "sentence-transformers/all-MiniLM-L6-v2",
]

# p50k_edit has the same ranks and regex as p50k_base, so its specials_as_text
# (encode_ordinary) ids are identical; it differs only where the text holds
# <|fim_prefix|>/<|fim_middle|>/<|fim_suffix|> (50281-50283). It is included
# in full anyway (tiktoken is fast). "gpt2" is the same as r50k_base and is
# not listed separately.
TIKTOKEN_ENCODINGS = [
    "r50k_base",
    "p50k_base",
    "p50k_edit",
    "cl100k_base",
    "o200k_base",
    "o200k_harmony",
    "llama3",
]

TIKTOKEN_FILES = {
    "r50k_base": "r50k_base.tiktoken",
    "p50k_base": "p50k_base.tiktoken",
    "p50k_edit": "p50k_base.tiktoken",
    "cl100k_base": "cl100k_base.tiktoken",
    "o200k_base": "o200k_base.tiktoken",
    "o200k_harmony": "o200k_base.tiktoken",
    "llama3": "llama3-tokenizer.model",
}

LLAMA3_HF_MODEL = "meta-llama/Meta-Llama-3-8B-Instruct"

# The specials_as_text variants are only computed for these inputs.
SPECIALS_AS_TEXT_KEYS = ["adversarial/special-tokens.txt", "en-prose/botchan.txt"]

CORPUS_SKIP = {"README.md", "SHA256SUMS", "make_adversarial.py"}

# Pairs whose ids are expected to agree (HF tokenizer.json vs tiktoken form).
CROSSCHECKS = [
    ("Xenova/gpt-3.5-turbo", "cl100k_base"),
    ("openai/gpt-oss-20b", "o200k_harmony"),
    ("openai/gpt-oss-20b", "o200k_base"),
    ("meta-llama/Meta-Llama-3-8B-Instruct", "llama3"),
    ("meta-llama/Llama-3.2-1B-Instruct", "llama3"),
]

# Short hostile strings; the full id lists are stored for each.
SMALL_TEXTS = [
    "",
    " ",
    "  \n\n\t",
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "  leading and trailing   spaces  ",
    "1" + "\uff11" * 100 + "2345",
    "e\u0301<bos>",
    "<|im_start|>user",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>assistant\n",
    "<|im_",
    "<s>hello</s>",
    "<s></s><s>",
    "[CLS] x [SEP]",
    "[INST] hi [/INST]",
    "<\uff5cUser\uff5c>hi<\uff5cAssistant\uff5c>",
    "<|endoftext|>",
    "a<|endoftext|>b<|endoftext|><|endoftext|>",
    "<|endoftext |> <|ENDOFTEXT|> <||>",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
    "<|start|>assistant<|channel|>final<|message|>Hi<|end|><|return|>",
    "<|reserved_200500|><|endofprompt|>",
    "<start_of_turn>user\nhi<end_of_turn>\n",
    "<think>\nok\n</think>\n\nanswer",
    "<|fim_prefix|>def f():<|fim_suffix|>\n<|fim_middle|>",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 family",
    "\U0001f1ef\U0001f1f5\U0001f1fa\U0001f1f8\U0001f1e9",
    "\U0001f44d\U0001f3fd\u2764\ufe0f 1\ufe0f\u20e3",
    "\u1d34\u1d49\u02e1\u02e1\u1d52",
    "\u3000\u3000\u3000x\u3000\u3000y\u3000",
    "\r\n\r\n",
    "a\rb\r\r\nc\n\rd\u2028e\u0085f",
    "Cafe\u0301 re\u0301sume\u0301 n\u0303 A\u030a",
    "\u1112\u1161\u11ab\u1100\u1173\u11af \ud55c\uae00",
    "ab" * 50,
    "7",
    "12",
    "123",
    "1234",
    "1234567",
    "3" * 33,
    "0123456789" * 30,
    "3.14159 -2e10 1,000,000 0x1F",
    "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669 \u06f1\u06f2\u06f3",
    "....",
    "Wait.... what........ ok" + "." * 41,
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3068\u4e2d\u6587\u6df7\u5408\ud55c\uad6d\uc5b4also English123\u0420\u0443\u0441\u0441\u043a\u0438\u0439",
    "don't you'LL I'M we'Ve",
    "\ufeffBOM then text",
    "\x00\x01\x7f\u0080\u009f",
    "\u200b\u200c\u200d\u2060\u202e",
    "\ue000\uf8ff\U0010ffff\ufffd\ufdd0",
    "\u01c4\u01c5\u01c6 \ufb01 \u338f \u216b \uff21\uff11",
    "\u0130stanbul \u01f0 \u00df \u1e9e",
    "https://example.com/a/b?q=1&r=%E2%9C%93#frag",
    "fn main() {\n\tprintln!(\"{}\", x_y + 1);\n}\n",
]


# --------------------------------------------------------------------------
# helpers


def sha256_hex(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def ids_sha256(ids) -> str:
    a = array.array("I", ids)
    if a.itemsize != 4:  # pragma: no cover - exotic platforms
        a = array.array("L", ids)
        assert a.itemsize == 4, "no 4-byte unsigned array type"
    if sys.byteorder != "little":  # pragma: no cover
        a.byteswap()
    return sha256_hex(a.tobytes())


def resolve_shared() -> Path:
    v = os.environ.get("RTOK_SHARED_DIR")
    p = Path(v) if v else Path("..") / "shared"
    if not p.is_absolute():
        p = REPO_ROOT / p
    return p.resolve()


def hf_snapshot_dir(shared: Path, model_id: str) -> Path:
    org, name = model_id.split("/", 1)
    d = shared / "hf-cache" / "hub" / f"models--{org}--{name}"
    commit = (d / "refs" / "main").read_text(encoding="ascii")
    assert len(commit) == 40, f"bad refs/main for {model_id}: {commit!r}"
    return d / "snapshots" / commit


def check_versions(allow_other: bool) -> dict:
    import tiktoken
    import tokenizers

    got = {"tokenizers": tokenizers.__version__, "tiktoken": tiktoken.__version__}
    for k, want in PINNED.items():
        if got[k] != want:
            msg = f"{k} {got[k]} installed, but the goldens are pinned to {want}"
            if not allow_other:
                sys.exit(msg + " (pass --allow-other-versions to override)")
            print("WARNING: " + msg, file=sys.stderr)
    return got


# --------------------------------------------------------------------------
# tokenizer construction (runs inside worker processes)


def build_tiktoken(name: str, shared: Path):
    import tiktoken
    import tiktoken.load as tl
    import tiktoken_ext.openai_public as op

    tdir = shared / "fixtures" / "tiktoken"

    if name == "llama3":
        j = json.loads(
            (hf_snapshot_dir(shared, LLAMA3_HF_MODEL) / "tokenizer.json").read_text(encoding="utf-8")
        )
        pre = j["pre_tokenizer"]
        splits = [p for p in pre["pretokenizers"] if p["type"] == "Split"]
        assert len(splits) == 1
        pat_str = splits[0]["pattern"]["Regex"]
        specials = {a["content"]: a["id"] for a in j["added_tokens"] if a["special"]}
        assert sorted(specials.values()) == list(range(128000, 128256)), "llama3 specials"
        ranks = tl.load_tiktoken_bpe(str(tdir / TIKTOKEN_FILES[name]))
        assert len(ranks) == 128000
        return tiktoken.Encoding(
            name="llama3", pat_str=pat_str, mergeable_ranks=ranks, special_tokens=specials
        )

    # Use tiktoken_ext.openai_public's own constructors (pat_str, special
    # tokens), with the blob download redirected to the local rank files. The
    # expected_hash that openai_public passes is still verified.
    def local_loader(url, expected_hash=None):
        fname = url.rsplit("/", 1)[1]
        return tl.load_tiktoken_bpe(str(tdir / fname), expected_hash=expected_hash)

    saved = op.load_tiktoken_bpe
    op.load_tiktoken_bpe = local_loader
    try:
        params = op.ENCODING_CONSTRUCTORS[name]()
    finally:
        op.load_tiktoken_bpe = saved
    return tiktoken.Encoding(**params)


def build_hf(model_id: str, shared: Path):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(hf_snapshot_dir(shared, model_id) / "tokenizer.json"))
    disabled = []
    if tok.padding is not None:
        tok.no_padding()
        disabled.append("padding")
    if tok.truncation is not None:
        tok.no_truncation()
        disabled.append("truncation")
    return tok, disabled


# --------------------------------------------------------------------------
# encoding (runs inside worker processes)


def hf_encode_file(tok, key: str, text: str) -> dict:
    tok.encode_special_tokens = False
    ids = tok.encode(text, add_special_tokens=False).ids
    plain = {
        "n": len(ids),
        "sha256": ids_sha256(ids),
        "decode_sha256": sha256_hex(tok.decode(ids, skip_special_tokens=False).encode("utf-8")),
        "decode_skip_sha256": sha256_hex(tok.decode(ids, skip_special_tokens=True).encode("utf-8")),
    }
    del ids
    ids = tok.encode(text, add_special_tokens=True).ids
    out = {"plain": plain, "with_special": {"n": len(ids), "sha256": ids_sha256(ids)}}
    del ids
    if key in SPECIALS_AS_TEXT_KEYS:
        tok.encode_special_tokens = True
        try:
            ids = tok.encode(text, add_special_tokens=False).ids
        finally:
            tok.encode_special_tokens = False
        out["specials_as_text"] = {
            "n": len(ids),
            "sha256": ids_sha256(ids),
            "decode_sha256": sha256_hex(tok.decode(ids, skip_special_tokens=False).encode("utf-8")),
        }
    return out


def tt_encode_file(enc, key: str, text: str) -> dict:
    ids = enc.encode(text, allowed_special="all")
    out = {
        "plain": {
            "n": len(ids),
            "sha256": ids_sha256(ids),
            "decode_sha256": sha256_hex(enc.decode_bytes(ids)),
        }
    }
    del ids
    if key in SPECIALS_AS_TEXT_KEYS:
        ids = enc.encode_ordinary(text)
        out["specials_as_text"] = {
            "n": len(ids),
            "sha256": ids_sha256(ids),
            "decode_sha256": sha256_hex(enc.decode_bytes(ids)),
        }
    return out


def small_results(kind: str, obj) -> list:
    res = []
    for s in SMALL_TEXTS:
        if kind == "hf":
            obj.encode_special_tokens = False
            r = {
                "plain": obj.encode(s, add_special_tokens=False).ids,
                "with_special": obj.encode(s, add_special_tokens=True).ids,
            }
            obj.encode_special_tokens = True
            r["specials_as_text"] = obj.encode(s, add_special_tokens=False).ids
            obj.encode_special_tokens = False
        else:
            r = {
                "plain": obj.encode(s, allowed_special="all"),
                "specials_as_text": obj.encode_ordinary(s),
            }
        res.append(r)
    return res


def worker_main(kind: str, name: str, shared: str, files: list, do_small: bool, conn) -> None:
    """files: list of (key, path). Sends messages through conn."""
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    shared_p = Path(shared)
    t0 = time.monotonic()
    if kind == "hf":
        obj, disabled = build_hf(name, shared_p)
        info = {"disabled": disabled}
        enc_fn = hf_encode_file
    else:
        obj = build_tiktoken(name, shared_p)
        info = {"n_vocab": obj.n_vocab, "n_special": len(obj._special_tokens)}
        enc_fn = tt_encode_file
    conn.send(("loaded", info, time.monotonic() - t0))
    if do_small:
        conn.send(("small", small_results(kind, obj)))
    for key, path in files:
        text = Path(path).read_bytes().decode("utf-8")
        conn.send(("start", key))
        t1 = time.monotonic()
        r = enc_fn(obj, key, text)
        conn.send(("done", key, r, time.monotonic() - t1))
    conn.send(("end",))
    conn.close()


# --------------------------------------------------------------------------
# orchestration (parent process)


class Job:
    def __init__(self, kind, name, files):
        self.kind = kind
        self.name = name
        self.pending = list(files)  # (key, path), in order
        self.results = {}
        self.small = None
        self.info = None
        self.proc = None
        self.conn = None
        self.cur = None
        self.cur_start = None
        self.t_start = None
        self.t_enc = 0.0
        self.finished = False

    @property
    def label(self):
        return f"{self.kind}:{self.name}"


def start_worker(ctx, job: Job, shared: Path):
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(
        target=worker_main,
        args=(job.kind, job.name, str(shared), job.pending, job.small is None, child),
        daemon=True,
    )
    p.start()
    child.close()
    job.proc, job.conn = p, parent
    job.cur, job.cur_start = None, time.monotonic()
    if job.t_start is None:
        job.t_start = time.monotonic()


def run_jobs(jobs, shared: Path, n_parallel: int, timeout: float, log) -> None:
    ctx = mp.get_context("spawn")
    queue = list(jobs)
    active = []
    while queue or active:
        while queue and len(active) < n_parallel:
            j = queue.pop(0)
            start_worker(ctx, j, shared)
            active.append(j)
        ready = mpc.wait([j.conn for j in active], timeout=5.0)
        now = time.monotonic()
        for j in list(active):
            if j.conn in ready:
                try:
                    msg = j.conn.recv()
                except EOFError:
                    msg = ("died",)
                tag = msg[0]
                if tag == "loaded":
                    j.info = msg[1]
                    log(f"  {j.label}: loaded in {msg[2]:.1f}s")
                elif tag == "small":
                    j.small = msg[1]
                elif tag == "start":
                    j.cur, j.cur_start = msg[1], now
                elif tag == "done":
                    key, r, dt = msg[1], msg[2], msg[3]
                    j.results[key] = r
                    j.t_enc += dt
                    j.pending = [(k, p) for (k, p) in j.pending if k != key]
                    j.cur = None
                    if dt > 30:
                        log(f"  {j.label}: {key} took {dt:.1f}s")
                elif tag == "end":
                    j.proc.join()
                    j.finished = True
                    active.remove(j)
                    summarize(j, log)
                elif tag == "died":
                    j.proc.join()
                    active.remove(j)
                    if j.cur is not None:
                        reason = f"worker died (exit code {j.proc.exitcode}) while encoding"
                        log(f"  {j.label}: {j.cur}: {reason}")
                        j.results[j.cur] = {"skipped": reason}
                        j.pending = [(k, p) for (k, p) in j.pending if k != j.cur]
                        queue.insert(0, j)
                    else:
                        raise RuntimeError(f"{j.label}: worker died (exit {j.proc.exitcode})")
            elif j.cur is not None and now - j.cur_start > timeout:
                reason = f"encoding took longer than {timeout:.0f}s (killed)"
                log(f"  {j.label}: {j.cur}: {reason}")
                j.proc.kill()
                j.proc.join()
                j.conn.close()
                j.results[j.cur] = {"skipped": reason}
                j.pending = [(k, p) for (k, p) in j.pending if k != j.cur]
                active.remove(j)
                queue.insert(0, j)  # restart with the remaining files


def summarize(j: Job, log) -> None:
    done = [r for r in j.results.values() if "skipped" not in r]
    skipped = [k for k, r in j.results.items() if "skipped" in r]
    ntok = sum(r["plain"]["n"] for r in done)
    wall = time.monotonic() - j.t_start
    log(
        f"{j.label}: {len(done)} files, {ntok} tokens (plain), encode {j.t_enc:.1f}s, "
        f"wall {wall:.1f}s, skipped {len(skipped)}{' ' + str(skipped) if skipped else ''}"
    )


def make_adversarial(shared: Path, outdir: Path) -> dict:
    gen = shared / "corpus" / "make_adversarial.py"
    subprocess.run(
        [sys.executable, str(gen), str(outdir)], check=True, stdout=subprocess.DEVNULL
    )
    index = {}
    lines = (outdir / "index.tsv").read_text(encoding="utf-8").splitlines()
    assert lines[0].split("\t")[:3] == ["name", "bytes", "sha256"], lines[0]
    for line in lines[1:]:
        name, nbytes, digest = line.split("\t")[:3]
        data = (outdir / name).read_bytes()
        assert len(data) == int(nbytes) and sha256_hex(data) == digest, f"index mismatch: {name}"
        index[name] = outdir / name
    assert len(index) == 18, f"expected 18 adversarial files, got {len(index)}"
    return index


def collect_inputs(shared: Path, advdir: Path) -> dict:
    corpus = shared / "corpus"
    files = {}
    for p in sorted(corpus.rglob("*")):
        if not p.is_file():
            continue
        rel = p.relative_to(corpus)
        if len(rel.parts) < 2 or rel.name in CORPUS_SKIP:
            continue
        files[rel.as_posix()] = p
    for name, p in sorted(make_adversarial(shared, advdir).items()):
        files[f"adversarial/{name}"] = p
    return dict(sorted(files.items()))


def crosscheck(hf: dict, tt: dict, small_hf: dict, small_tt: dict) -> dict:
    out = {}
    for m, e in CROSSCHECKS:
        if m not in hf or e not in tt:
            continue
        res = {}
        for variant in ("plain", "specials_as_text"):
            compared, mismatched = 0, []
            for key in sorted(hf[m]):
                a, b = hf[m][key].get(variant), tt[e].get(key, {}).get(variant)
                if a is None or b is None:
                    continue
                compared += 1
                if (a["n"], a["sha256"]) != (b["n"], b["sha256"]):
                    mismatched.append(key)
            res[f"files_{variant}_compared"] = compared
            res[f"files_{variant}_mismatched"] = mismatched
            sm = [
                i
                for i, (x, y) in enumerate(zip(small_hf[m], small_tt[e]))
                if x[variant] != y[variant]
            ]
            res[f"small_{variant}_mismatched"] = sm
        out[f"{m} ~ {e}"] = res
    return out


def dump(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def write_json(path: Path, doc: dict) -> None:
    """Sorted keys, compact; one tokenizer / one small text per line."""
    parts = ["{"]
    top = sorted(doc)
    for ti, k in enumerate(top):
        v = doc[k]
        comma = "," if ti + 1 < len(top) else ""
        if k in ("hf", "tiktoken", "inputs", "crosscheck") and isinstance(v, dict):
            parts.append(f"{dump(k)}:{{")
            sub = sorted(v)
            for si, sk in enumerate(sub):
                c2 = "," if si + 1 < len(sub) else ""
                parts.append(f"{dump(sk)}:{dump(v[sk])}{c2}")
            parts.append("}" + comma)
        elif k == "small" and isinstance(v, list):
            parts.append(f"{dump(k)}:[")
            for si, item in enumerate(v):
                c2 = "," if si + 1 < len(v) else ""
                parts.append(dump(item) + c2)
            parts.append("]" + comma)
        else:
            parts.append(f"{dump(k)}:{dump(v)}{comma}")
    parts.append("}")
    text = "\n".join(parts) + "\n"
    json.loads(text)  # sanity
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=SCRIPT_DIR / "encode.json")
    ap.add_argument("--jobs", type=int, default=2, help="tokenizers run in parallel (max 2)")
    ap.add_argument("--timeout", type=float, default=300.0, help="per (tokenizer, file) limit, s")
    ap.add_argument("--date", help="meta.generated (default: SOURCE_DATE_EPOCH or today, UTC)")
    ap.add_argument("--only", help="comma-separated tokenizer names (debugging; partial output)")
    ap.add_argument("--allow-other-versions", action="store_true")
    args = ap.parse_args()

    def log(msg):
        print(msg, flush=True)

    t_all = time.monotonic()
    versions = check_versions(args.allow_other_versions)
    shared = resolve_shared()
    log(f"shared dir: {shared}")
    if args.date:
        date = args.date
    elif os.environ.get("SOURCE_DATE_EPOCH"):
        date = _dt.datetime.fromtimestamp(
            int(os.environ["SOURCE_DATE_EPOCH"]), _dt.timezone.utc
        ).strftime("%Y-%m-%d")
    else:
        date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d")

    with tempfile.TemporaryDirectory(prefix="rtok-adv-") as advdir:
        files = collect_inputs(shared, Path(advdir))
        for k in SPECIALS_AS_TEXT_KEYS:
            assert k in files, k
        inputs = {}
        for key, p in files.items():
            data = p.read_bytes()
            data.decode("utf-8")  # strict
            inputs[key] = {"bytes": len(data), "sha256": sha256_hex(data)}
        log(f"{len(files)} input files, {sum(v['bytes'] for v in inputs.values())} bytes")

        only = set(args.only.split(",")) if args.only else None
        jobs = [Job("hf", m, files.items()) for m in HF_MODELS if not only or m in only]
        jobs += [Job("tiktoken", e, files.items()) for e in TIKTOKEN_ENCODINGS if not only or e in only]
        run_jobs(jobs, shared, max(1, min(2, args.jobs)), args.timeout, log)

    hf = {j.name: dict(sorted(j.results.items())) for j in jobs if j.kind == "hf"}
    tt = {j.name: dict(sorted(j.results.items())) for j in jobs if j.kind == "tiktoken"}
    small_hf = {j.name: j.small for j in jobs if j.kind == "hf"}
    small_tt = {j.name: j.small for j in jobs if j.kind == "tiktoken"}
    small = []
    for i, s in enumerate(SMALL_TEXTS):
        small.append(
            {
                "text": s,
                "hf": {m: v[i] for m, v in sorted(small_hf.items())},
                "tiktoken": {e: v[i] for e, v in sorted(small_tt.items())},
            }
        )

    hf_files = {}
    for j in jobs:
        if j.kind == "hf":
            p = hf_snapshot_dir(shared, j.name) / "tokenizer.json"
            hf_files[j.name] = {
                "tokenizer_json_sha256": sha256_hex(p.read_bytes()),
                "disabled": j.info["disabled"],
            }
    tt_files = {}
    for j in jobs:
        if j.kind == "tiktoken":
            p = shared / "fixtures" / "tiktoken" / TIKTOKEN_FILES[j.name]
            tt_files[j.name] = {
                "rank_file": TIKTOKEN_FILES[j.name],
                "rank_file_sha256": sha256_hex(p.read_bytes()),
                **j.info,
            }

    skipped = sorted(
        f"{j.label} {k}: {r['skipped']}" for j in jobs for k, r in j.results.items() if "skipped" in r
    )
    doc = {
        "meta": {
            "tokenizers_version": versions["tokenizers"],
            "tiktoken_version": versions["tiktoken"],
            "python_version": sys.version.split()[0],
            "generated": date,
            "adversarial_args": "default",
            "ids_hash": "sha256 of ids packed as little-endian u32",
            "decode_hash": "sha256 of decoded UTF-8 bytes (HF decode) / raw decode_bytes (tiktoken)",
            "specials_as_text_keys": SPECIALS_AS_TEXT_KEYS,
            "hf_files": hf_files,
            "tiktoken_files": tt_files,
            "skipped": skipped,
            "partial": bool(only),
        },
        "inputs": inputs,
        "hf": hf,
        "tiktoken": tt,
        "small": small,
        "crosscheck": crosscheck(hf, tt, small_hf, small_tt),
    }
    write_json(args.out, doc)
    log("crosscheck:")
    for k, v in doc["crosscheck"].items():
        log(f"  {k}: {dump(v)}")
    if skipped:
        log("skipped pairs:")
        for s in skipped:
            log("  " + s)
    log(
        f"wrote {args.out} ({args.out.stat().st_size} bytes) in {time.monotonic() - t_all:.1f}s"
    )


if __name__ == "__main__":
    main()
