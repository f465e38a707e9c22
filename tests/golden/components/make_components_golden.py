#!/usr/bin/env python3
"""Write tests/golden/components/: small tokenizers trained by Python
`tokenizers` on the shared corpus, one for each model and component family
the shared hub files do not cover, and `components.json`, the reference's
ids and decodes for them and for shared files with added tokens that carry
`lstrip`, `rstrip`, `single_word` and `normalized` flags (DESIGN.md invariants
`crate-steps-equal-reference` and `pipeline-walk-equals-pipeline`).

    pip install tokenizers==0.23.3
    python3 tests/golden/components/make_components_golden.py [--shared ../shared]

`trained/` holds the tokenizers (BPE with an end-of-word suffix, BPE with a
continuing-subword prefix, WordLevel, Unigram, WordPiece, byte-fallback BPE
with a Llama-2 decoder, RoBERTa-style byte-level BPE with `add_prefix_space`,
Metaspace BPE), each with its post-processor. For
each, `components.json` has the ids of `texts` and `long` without and with
special tokens, and the decodes of the former with and without skipping
special tokens. `patched` holds added-token lists (with their ids) that the
test appends to a shared file's `added_tokens`, and the reference's ids of
`flag_texts` and `long` under each; padding and truncation are off.
`pre_tokenizers` holds pre-tokenizer shapes, each with the reference's ids
of `pre_texts` under Llama-3's `tokenizer.json` with that pre-tokenizer.
"""

import json
import pathlib
import random
import sys
import tempfile

import tokenizers
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[2] / "scripts"))
from reference_golden import prose, shared_from_args  # noqa: E402
import fuzz_reference  # noqa: E402

SPECIALS = ["<s>", "</s>", "<unk>", "<pad>", "[CLS]", "[SEP]", "[UNK]", "[PAD]", "[MASK]"]
BYTES = [f"<0x{i:02X}>" for i in range(256)]


def sample(shared):
    """About 240 KB of English prose and code to train on."""
    parts = []
    for cat in ["en-prose", "code"]:
        p = sorted((shared / "corpus" / cat).iterdir())[0]
        parts.append(p.read_text(encoding="utf-8", errors="ignore")[:120_000])
    return parts


def trained(shared):
    data = sample(shared)
    out = {}

    def train(name, tok, trainer, post=None):
        tok.train_from_iterator(data, trainer=trainer)
        if post:
            tok.post_processor = post(tok)
        out[name] = tok

    tok = Tokenizer(models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.BPEDecoder(suffix="</w>")
    train("bpe_suffix", tok, trainers.BpeTrainer(vocab_size=1500, special_tokens=SPECIALS, end_of_word_suffix="</w>"),
          lambda t: processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> $B:1 </s>:1",
                                                  special_tokens=[("<s>", t.token_to_id("<s>")), ("</s>", t.token_to_id("</s>"))]))
    tok = Tokenizer(models.BPE(unk_token="[UNK]", continuing_subword_prefix="##"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    train("bpe_prefix", tok, trainers.BpeTrainer(vocab_size=1500, special_tokens=SPECIALS, continuing_subword_prefix="##"))
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    train("wordlevel", tok, trainers.WordLevelTrainer(vocab_size=2000, special_tokens=SPECIALS),
          lambda t: processors.BertProcessing(("[SEP]", t.token_to_id("[SEP]")), ("[CLS]", t.token_to_id("[CLS]"))))
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.Sequence([normalizers.Nmt(), normalizers.NFKC()])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    train("unigram", tok, trainers.UnigramTrainer(vocab_size=1500, special_tokens=["<pad>", "</s>", "<unk>"], unk_token="<unk>"),
          lambda t: processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", t.token_to_id("</s>"))]))
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    train("wordpiece", tok, trainers.WordPieceTrainer(vocab_size=1500, special_tokens=SPECIALS),
          lambda t: processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                                  special_tokens=[("[CLS]", t.token_to_id("[CLS]")), ("[SEP]", t.token_to_id("[SEP]"))]))
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    train("byte_fallback", tok, trainers.BpeTrainer(vocab_size=1500, special_tokens=["<unk>", "<s>", "</s>"] + BYTES),
          lambda t: processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", t.token_to_id("<s>"))]))
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    train("byte_level_prefix_space", tok,
          trainers.BpeTrainer(vocab_size=1500, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()),
          lambda t: processors.RobertaProcessing(("</s>", t.token_to_id("</s>")), ("<s>", t.token_to_id("<s>")),
                                                 trim_offsets=True, add_prefix_space=True))
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="first", split=True)
    tok.decoder = decoders.Metaspace(prepend_scheme="first")
    train("metaspace_first", tok, trainers.BpeTrainer(vocab_size=1500, special_tokens=["<unk>", "<s>", "</s>"] + BYTES))
    return out


# Added-token contents: tags, words, whitespace, a token led by a space, a
# multi-byte char, and a letter of Unicode 17 (not a word char to the
# reference's Unicode 16 `\w`).
CONTENTS = ["<t>", "</t>", "<|x|>", "hello", "ABC", " sp", "\n", "ok", "[[X]]", "a b", "\u00e9", "\U00010940z", "<m>"]
FLAG_PIECES = CONTENTS + [" ", "  ", "\n", "\t", " \n ", "a", "word", "My", "x", "1", "_", "\u00a0", "\u3000",
                          "\u00e9", "\U00010940", ".", "HELLO", "Hello"]
PATCH_BASES = {"llama3": "meta-llama/Meta-Llama-3-8B-Instruct", "minilm": "sentence-transformers/all-MiniLM-L6-v2",
               "gemma3": "google/gemma-3-4b-it", "mistral7b": "mistralai/Mistral-7B-v0.1", "qwen3": "Qwen/Qwen3-8B"}


def snapshot(shared, model):
    snap = shared / "hf-cache/hub" / ("models--" + model.replace("/", "--"))
    commit = (snap / "refs/main").read_text().strip()
    return snap / "snapshots" / commit / "tokenizer.json"


def patches(rng):
    """Per base model, two random flag sets over a random choice of contents."""
    out = []
    for name in sorted(PATCH_BASES):
        for k in range(2):
            toks = [dict(content=c, lstrip=rng.random() < .4, rstrip=rng.random() < .4, single_word=rng.random() < .3,
                         normalized=rng.random() < .5, special=rng.random() < .5)
                    for c in rng.sample(CONTENTS, rng.randint(3, 7))]
            out.append((f"{name}_{k}", PATCH_BASES[name], toks))
    return out


BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}


def pre_tokenizer_shapes():
    """Pre-tokenizer shapes on Llama-3's vocabulary (invariant `crate-steps-equal-reference`): every
    `Split` behavior, inverted or not, on a regex `tokenizers` 1.0 has no
    engine for and on a string; `Punctuation` with each behavior;
    `CharDelimiterSplit`, `WhitespaceSplit`, `Digits`; BLOOM's regex."""
    out = {}
    for behavior in ["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"]:
        for invert in [False, True]:
            out[f"split_regex_{behavior}_{invert}"] = {"type": "Split", "pattern": {"Regex": "\\d+|\\s+|[.,]"},
                                                       "behavior": behavior, "invert": invert}
            out[f"split_string_{behavior}_{invert}"] = {"type": "Split", "pattern": {"String": " "},
                                                        "behavior": behavior, "invert": invert}
        out[f"punctuation_{behavior}"] = {"type": "Punctuation", "behavior": behavior}
    out["char_delimiter"] = {"type": "CharDelimiterSplit", "delimiter": "e"}
    out["whitespace_split"] = {"type": "WhitespaceSplit"}
    out["digits_runs"] = {"type": "Digits", "individual_digits": False}
    out["bloom"] = {"type": "Split", "pattern": {"Regex": " ?[^(\\s|[.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c])]+"},
                    "behavior": "Isolated", "invert": False}
    return {name: {"type": "Sequence", "pretokenizers": [pre, BYTE_LEVEL]} for name, pre in out.items()}


def main():
    shared = shared_from_args(HERE)
    rng = random.Random(377)
    texts = fuzz_reference.texts(377, 120)
    for i, t in enumerate(texts):
        parts = [t]
        for _ in range(rng.randint(0, 4)):
            parts.insert(rng.randint(0, len(parts)), rng.choice(SPECIALS + ["a", "b", "1", "-", "'", " ", "\u00e9"]))
        texts[i] = "".join(parts)
    texts += ["", " ", "a", "a b", "a'b 1e-9", "I", "x.", "\u00e9", "\u4e2d", "<s>", " <s> ", "[CLS] a [SEP]"]
    flag_texts = ["".join(rng.choice(FLAG_PIECES) for _ in range(rng.randint(1, 12))) for _ in range(250)]
    flag_texts += ["hello", " hello ", "xhello", "a <t> b", "a </t>  b", "<|x|>", " <|x|> ", "[[X]]x", " [[X]] ",
                   "</t>\n<|x|>\n", "<t>\t\t<t>", "\u00e9\U00010940z \U00010940z<t> \n  \n word"]
    base = prose(shared, 40000, 46000)
    long = "".join(ch + (rng.choice(CONTENTS + SPECIALS) if i % 97 == 96 else "") for i, ch in enumerate(base))
    doc = {"tokenizers": tokenizers.__version__, "texts": texts, "flag_texts": flag_texts, "long": long,
           "trained": {}, "patched": {}}
    (HERE / "trained").mkdir(exist_ok=True)
    for name, tok in trained(shared).items():
        path = HERE / "trained" / f"{name}.json"
        tok.save(str(path))
        tok = Tokenizer.from_file(str(path))
        plain = [tok.encode(t, add_special_tokens=False).ids for t in texts]
        doc["trained"][name] = {
            "file": f"trained/{name}.json",
            "texts": plain,
            "special": [tok.encode(t).ids for t in texts],
            "decode": [tok.decode(ids, skip_special_tokens=False) for ids in plain],
            "decode_skip": [tok.decode(ids) for ids in plain],
            "long": tok.encode(long, add_special_tokens=False).ids,
        }
    for name, model, toks in patches(rng):
        tok = Tokenizer.from_file(str(snapshot(shared, model)))
        for t in toks:
            added = AddedToken(t["content"], lstrip=t["lstrip"], rstrip=t["rstrip"], single_word=t["single_word"],
                               normalized=t["normalized"], special=t["special"])
            (tok.add_special_tokens if t["special"] else tok.add_tokens)([added])
        with tempfile.TemporaryDirectory() as tmp:
            tok.save(tmp + "/t.json")
            saved = json.loads(pathlib.Path(tmp + "/t.json").read_text(encoding="utf-8"))
            tok = Tokenizer.from_file(tmp + "/t.json")
        tok.no_padding()
        tok.no_truncation()
        contents = {t["content"] for t in toks}
        entries = [a for a in saved["added_tokens"] if a["content"] in contents]
        ids = []
        for t in flag_texts:
            try:
                ids.append(tok.encode(t, add_special_tokens=False).ids)
            except BaseException:  # the reference panics ("AddedVocabulary bad split")
                ids.append(None)
        doc["patched"][name] = {"base": model, "added_tokens": entries, "texts": ids,
                                "long": tok.encode(long, add_special_tokens=False).ids}
    base = json.loads(snapshot(shared, "meta-llama/Meta-Llama-3-8B-Instruct").read_text(encoding="utf-8"))
    doc["pre_tokenizers"] = {}
    pre_texts = texts[:30] + ["Hello, world! 12345 ... \u3002\uff0c", "a   b\n\nc", "eee e", "1,234.56"]
    doc["pre_texts"] = pre_texts
    for name, pre in pre_tokenizer_shapes().items():
        base["pre_tokenizer"] = pre
        with tempfile.TemporaryDirectory() as tmp:
            pathlib.Path(tmp + "/t.json").write_text(json.dumps(base), encoding="utf-8")
            tok = Tokenizer.from_file(tmp + "/t.json")
        doc["pre_tokenizers"][name] = {"pre_tokenizer": pre,
                                       "texts": [tok.encode(t, add_special_tokens=False).ids for t in pre_texts]}
    (HERE / "components.json").write_text(json.dumps(doc, ensure_ascii=True, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
