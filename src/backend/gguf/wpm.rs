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
/// first code point of its canonical decomposition. `None` when that changes
/// nothing; otherwise the mapped text and, for each of its bytes (and one
/// past the end), the byte offset in `text` of the character it came from.
pub(crate) fn llama_nfd(text: &str) -> Option<(String, Vec<usize>)> {
    let first = |c: char| {
        let mut out = None;
        unicode_normalization::char::decompose_canonical(c, |d| {
            out.get_or_insert(d);
        });
        out.unwrap_or(c)
    };
    if text.is_ascii() || text.chars().all(|c| first(c) == c) {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut map = Vec::with_capacity(text.len() + 1);
    for (i, c) in text.char_indices() {
        let m = first(c);
        out.push(m);
        map.extend(std::iter::repeat_n(i, m.len_utf8()));
    }
    map.push(text.len());
    Some((out, map))
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
    }
}
