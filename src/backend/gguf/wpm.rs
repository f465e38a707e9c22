//! `bert` vocabularies on the crate's WordPiece engine (the Hugging Face
//! backend), like `gpt2` ones on its BPE engine.
//!
//! llama.cpp's converter stores a word-initial piece `word` as `▁word` and a
//! continuation `##ing` as `ing`; the in-memory `tokenizer.json` spells them
//! back the BERT way and runs BertNormalizer (lowercase), BertPreTokenizer
//! and WordPiece. Known difference from llama.cpp's own WPM: it lowercases
//! and NFD-decomposes without stripping accents, so a word with a combining
//! mark may become `[UNK]` there and a piece here.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::vocab::{Vocab, attr};
use crate::backend::hf::HfBackend;
use crate::config::TokenizerConfig;
use crate::error::{Error, Result};
use crate::special::SpecialTokenPolicy;

/// Builds the HF backend for a `bert` vocabulary.
pub(crate) fn build(path: &Path, v: &Vocab) -> Result<HfBackend> {
    const MARK: &str = "\u{2581}";
    let mut tokens = Map::with_capacity(v.len());
    for id in 0..v.len() as u32 {
        let Ok(t) = std::str::from_utf8(v.token(id)) else {
            continue;
        };
        let special = v.attr(id) & (attr::CONTROL | attr::UNKNOWN | attr::USER_DEFINED) != 0;
        let spelled = match t.strip_prefix(MARK) {
            _ if special => t.to_owned(),
            Some(word) => word.to_owned(),
            None => format!("##{t}"),
        };
        tokens.entry(spelled).or_insert(Value::from(id));
    }
    let unk = v
        .unk
        .and_then(|id| std::str::from_utf8(v.token(id)).ok())
        .unwrap_or("[UNK]");
    let doc = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [],
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": null,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {
            "type": "WordPiece",
            "unk_token": unk,
            "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100,
            "vocab": Value::Object(tokens),
        }
    });
    let text = serde_json::to_string(&doc)
        .map_err(|e| Error::parse(path, format!("building tokenizer.json from GGUF: {e}")))?;
    HfBackend::from_json(
        path,
        &text,
        &TokenizerConfig::default(),
        SpecialTokenPolicy::PlainText,
        false,
    )
}
