#!/usr/bin/env python3
"""Compare Mistral-7B-v0.1 tokenizer.model (sentencepiece) with its
tokenizer.json (HF `tokenizers`, add_special_tokens=False) on every corpus
file (whole file as one string) and every adversarial file. Prints one line
per file and a summary; exits 1 on any mismatch.

Expected result (sentencepiece 0.2.3, tokenizers 0.23.3): 47/48 identical;
adversarial/special-tokens.txt differs because `tokenizers` parses the
literal texts <s>, </s>, <unk> as special tokens (set
`encode_special_tokens = True` and all 48 match).

Usage: python3 compare_hf_tokenizers.py [SHARED_DIR]
SHARED_DIR defaults to $RTOK_SHARED_DIR, else ../shared beside the crate root.
"""
import glob, os, subprocess, sys, tempfile, time
from pathlib import Path

import sentencepiece as spm
import tokenizers

if len(sys.argv) > 1:
    shared = Path(sys.argv[1])
elif os.environ.get("RTOK_SHARED_DIR"):
    shared = Path(os.environ["RTOK_SHARED_DIR"])
else:
    shared = Path(__file__).resolve().parents[3].parent / "shared"
snap = Path(glob.glob(str(shared / "hf-cache/hub/models--mistralai--Mistral-7B-v0.1/snapshots/*"))[0])
sp = spm.SentencePieceProcessor(model_file=str(snap / "tokenizer.model"))
hf = tokenizers.Tokenizer.from_file(str(snap / "tokenizer.json"))
print(f"sentencepiece {spm.__version__}, tokenizers {tokenizers.__version__}")
files = sorted(p for p in (shared / "corpus").rglob("*") if p.is_file()
               and p.name not in ("README.md", "SHA256SUMS", "make_adversarial.py"))
td = tempfile.mkdtemp()
subprocess.run([sys.executable, str(shared / "corpus/make_adversarial.py"), td], check=True, stdout=subprocess.DEVNULL)
files += sorted(Path(td).glob("*.txt"))
bad = 0
for p in files:
    text = p.read_text(encoding="utf-8")
    t0 = time.time(); a = sp.encode(text); t1 = time.time()
    b = hf.encode(text, add_special_tokens=False).ids; t2 = time.time()
    ok = a == b
    if not ok:
        bad += 1
        i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
        print(f"MISMATCH {p.name}: spm {len(a)} ids, hf {len(b)} ids, first diff at {i}: spm {a[i:i+5]} hf {b[i:i+5]}")
    else:
        print(f"ok {p.name}: {len(a)} ids (spm {t1-t0:.1f}s, hf {t2-t1:.1f}s)")
print(f"{len(files) - bad}/{len(files)} files identical")
sys.exit(1 if bad else 0)
