//! `bert` vocabularies on the crate's WordPiece engine (the Hugging Face
//! backend), like `gpt2` ones on its BPE engine.
//!
//! llama.cpp's converter stores a word-initial piece `word` as `▁word` and a
//! continuation `##ing` as `ing`; the in-memory `tokenizer.json` spells them
//! back the BERT way and runs BertNormalizer (lowercase), BertPreTokenizer
//! and WordPiece. llama.cpp's own WPM "NFD" maps each code point to the
//! first code point of its canonical decomposition (`é` → `e`, `が` → `か`)
//! and keeps combining marks that stand alone in the text (Arabic harakat,
//! Devanagari vowel signs), so the text goes through [`llama_nfd`] first and
//! BertNormalizer runs without accent stripping; words have no length limit.

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
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": false, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": null,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {
            "type": "WordPiece",
            "unk_token": unk,
            "continuing_subword_prefix": "##",
            "max_input_chars_per_word": u32::MAX,
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

/// llama.cpp's `unicode_cpts_normalize_nfd`: every code point becomes the
/// first code point of its canonical decomposition. The three White_Space
/// characters that are also controls (VT, FF, NEL) become a space: llama.cpp's
/// WPM tests for whitespace first and splits the word there, where
/// BertNormalizer's `clean_text` tests for controls first and deletes them,
/// joining the words around them. `None` when that changes nothing;
/// otherwise the mapped text and, for each of its bytes (and one past the
/// end), the byte offset in `text` of the character it came from.
pub(crate) fn llama_nfd(text: &str) -> Option<(String, Vec<usize>)> {
    let first = |c: char| {
        if matches!(c, '\u{0B}' | '\u{0C}' | '\u{85}') {
            return ' ';
        }
        let mut out = None;
        unicode_normalization::char::decompose_canonical(c, |d| {
            out.get_or_insert(d);
        });
        out.unwrap_or(c)
    };
    let plain_ascii = text.bytes().all(|b| b.is_ascii() && b != 0x0B && b != 0x0C);
    if plain_ascii || text.chars().all(|c| first(c) == c) {
        return None;
    }
    Some(super::charmap::map_chars(text, first))
}

#[cfg(test)]
mod tests {
    use super::llama_nfd;

    #[test]
    fn first_code_point_of_the_decomposition() {
        assert_eq!(llama_nfd("abc"), None);
        assert_eq!(llama_nfd("\u{0628}\u{064E}"), None);
        let (s, map) = llama_nfd("éが").unwrap();
        assert_eq!(s, "eか");
        assert_eq!(map, vec![0, 2, 2, 2, 5]);
        let (s, map) = llama_nfd("a\u{85}b\u{0B}c").unwrap();
        assert_eq!(s, "a b c");
        assert_eq!(map, vec![0, 1, 3, 4, 5, 6]);
    }
}
