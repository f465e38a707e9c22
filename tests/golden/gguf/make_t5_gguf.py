#!/usr/bin/env python3
"""Vocab-only `t5` (UGM) GGUF files made from the shared SentencePiece
Unigram test models, written the way llama.cpp's convert_hf_to_gguf.py
(`T5Model.set_vocab` / `set_gguf_parameters`) writes a T5 model:

- tokens / scores / token types from the SentencePiece model (a
  USER_DEFINED piece is written NORMAL, as T5Model does; UNKNOWN, CONTROL,
  UNUSED and BYTE keep their types); a vocab_size larger than the model's is
  padded with `[PAD{i}]` UNUSED tokens at -10000, and added tokens
  (`added_tokens.json`) overwrite their slot as USER_DEFINED at -1000;
- `tokenizer.ggml.model = "t5"`, `pre = "default"`, `add_space_prefix` and
  `remove_extra_whitespaces` from the normalizer spec, the precompiled
  charsmap when the spec has one, `add_bos = false`, `add_eos = true`;
- special ids as `gguf.SpecialVocab` writes them from a tokenizer_config
  naming `<s>`, `</s>`, `<unk>` (the SentencePiece model's own ids here);
- the T5 hyper-parameters that a vocab-only llama.cpp load reads.

Usage: python3 make_t5_gguf.py SHARED_DIR OUT_DIR
Writes t5-test.gguf (spm-test_model + 4 added tokens + 4 padding tokens),
t5-test-ja.gguf (spm-test_ja_model as is) and t5-test-identity.gguf
(spm-test_model with an identity normalizer: no charsmap, no whitespace
removal) plus t5-test-identity.model, the matching SentencePiece model for
reference ids.
"""
import os
import sys
from pathlib import Path

os.environ["PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"] = "python"
import gguf  # noqa: E402
from sentencepiece import SentencePieceProcessor  # noqa: E402
from sentencepiece import sentencepiece_model_pb2 as model  # noqa: E402

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def write(model_bytes: bytes, out: Path, vocab_size=None, added=None):
    proto = model.ModelProto()
    proto.ParseFromString(model_bytes)
    assert proto.trainer_spec.model_type == 1  # UNIGRAM
    sp = SentencePieceProcessor()
    sp.LoadFromSerializedProto(model_bytes)
    ns = proto.normalizer_spec
    vocab_size = vocab_size or sp.vocab_size()
    tokens = [f"[PAD{i}]".encode() for i in range(vocab_size)]
    scores = [-10000.0] * vocab_size
    types = [UNUSED] * vocab_size
    for i in range(sp.vocab_size()):
        t = NORMAL
        if sp.IsUnknown(i):
            t = UNKNOWN
        elif sp.IsControl(i):
            t = CONTROL
        elif sp.IsUnused(i):
            t = UNUSED
        elif sp.IsByte(i):
            t = BYTE
        tokens[i] = sp.IdToPiece(i).encode()
        scores[i] = sp.GetScore(i)
        types[i] = t
    for text, i in (added or {}).items():
        tokens[i] = text.encode()
        scores[i] = -1000.0
        types[i] = USER_DEFINED
    w = gguf.GGUFWriter(str(out), "t5")
    w.add_name(out.stem)
    w.add_context_length(512)
    w.add_embedding_length(64)
    w.add_feed_forward_length(128)
    w.add_block_count(1)
    w.add_head_count(1)
    w.add_key_length(64)
    w.add_value_length(64)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_relative_attn_buckets_count(32)
    w.add_decoder_start_token_id(max(sp.pad_id(), 0))
    w.add_file_type(0)
    w.add_tokenizer_model("t5")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_add_space_prefix(ns.add_dummy_prefix)
    w.add_remove_extra_whitespaces(ns.remove_extra_whitespaces)
    if ns.precompiled_charsmap:
        w.add_precompiled_charsmap(ns.precompiled_charsmap)
    for name, i in (("bos", sp.bos_id()), ("eos", sp.eos_id()), ("unk", sp.unk_id()), ("pad", sp.pad_id())):
        if i >= 0:
            getattr(w, f"add_{name}_token_id")(i)
    w.add_add_bos_token(False)
    w.add_add_eos_token(True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    shared, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    spm_dir = shared / "fixtures/sentencepiece"
    base = (spm_dir / "spm-test_model.model").read_bytes()
    added = {f"<extra_id_{k}>": 1000 + k for k in range(4)}
    write(base, out / "t5-test.gguf", vocab_size=1008, added=added)
    write((spm_dir / "spm-test_ja_model.model").read_bytes(), out / "t5-test-ja.gguf")
    proto = model.ModelProto()
    proto.ParseFromString(base)
    proto.normalizer_spec.name = "identity"
    proto.normalizer_spec.precompiled_charsmap = b""
    proto.normalizer_spec.remove_extra_whitespaces = False
    identity = proto.SerializeToString()
    (out / "t5-test-identity.model").write_bytes(identity)
    write(identity, out / "t5-test-identity.gguf")


if __name__ == "__main__":
    main()
