#!/usr/bin/env python3
"""Write tests/golden/chat_bare_model/expected.json: what transformers renders
with a chat template given by hand for a bare SentencePiece `.model` (no
`tokenizer_config.json`), whose `bos_token`, `eos_token`, `unk_token` are
then the slow tokenizer's own: `LlamaTokenizer(vocab_file=...)` gives `<s>`,
`</s>`, `<unk>` (the pieces of the model's `bos_id`, `eos_id`, `unk_id` in
every shared model) and no `pad_token` (issue 39, item 7).

    pip install transformers==5.24.0 sentencepiece==0.2.3
    RTOK_SHARED_DIR=../shared python3 tests/golden/chat_bare_model/make_chat_bare_model_golden.py
"""

import json
import os
import pathlib

import sentencepiece
import transformers
from transformers import LlamaTokenizer

HERE = pathlib.Path(__file__).resolve().parent
SHARED = pathlib.Path(os.environ.get("RTOK_SHARED_DIR", HERE.parents[3] / "shared"))
if not SHARED.is_absolute():
    SHARED = HERE.parents[2] / SHARED

MODELS = ["spm-test_model.model", "spm-test_ja_model.model", "mistral-tokenizer.model.v1",
          "mistral_instruct_tokenizer_240323.model.v3", "mistral_instruct_tokenizer_241114.model.v7"]
TEMPLATES = {
    "inst": "{{ bos_token }}{% for m in messages %}[INST] {{ m['content'] }} [/INST]{% endfor %}{{ eos_token }}",
    "concat": "{% for m in messages %}{{ bos_token + m['content'] + eos_token }}{% endfor %}",
    "others": "[{{ unk_token }}|{{ pad_token }}|{{ sep_token }}|{{ pad_token is defined }}]",
}
MESSAGES = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"},
            {"role": "user", "content": "again"}]


def main():
    doc = {"transformers": transformers.__version__, "sentencepiece": sentencepiece.__version__,
           "messages": MESSAGES, "templates": TEMPLATES, "models": {}}
    for name in MODELS:
        path = SHARED / "fixtures" / "sentencepiece" / name
        sp = sentencepiece.SentencePieceProcessor(model_file=str(path))
        tok = LlamaTokenizer(vocab_file=str(path))
        pieces = {role: sp.id_to_piece(i) for role, i in
                  [("bos", sp.bos_id()), ("eos", sp.eos_id()), ("unk", sp.unk_id())] if i >= 0}
        doc["models"][name] = {
            "pieces": pieces,
            "special_tokens_map": tok.special_tokens_map,
            "rendered": {k: tok.apply_chat_template(MESSAGES, chat_template=t, tokenize=False)
                         for k, t in TEMPLATES.items()},
        }
    (HERE / "expected.json").write_text(json.dumps(doc, ensure_ascii=True, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
