//! The id ↔ token tables of a `tokenizer.json`, read once at load.
//!
//! `tokenizers` 1.0's read-only pipeline has no public vocabulary iteration or
//! token → id lookup for BPE, so the loader reads `model.vocab` and
//! `added_tokens` itself (serde skips everything else in the file).

use rustc_hash::FxHashMap;
use serde::Deserialize;
use std::path::Path;

use crate::backend::byte_level;
use crate::error::{Error, Result};

#[derive(Deserialize)]
struct FileView {
    #[serde(default)]
    added_tokens: Vec<AddedTokenView>,
    model: ModelView,
    #[serde(default)]
    decoder: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct AddedTokenView {
    id: u32,
    content: String,
    #[serde(default)]
    special: bool,
}

#[derive(Deserialize)]
struct ModelView {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    vocab: Option<VocabView>,
    #[serde(default)]
    continuing_subword_prefix: Option<String>,
    #[serde(default)]
    end_of_word_suffix: Option<String>,
    #[serde(default)]
    byte_fallback: bool,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum VocabView {
    Map(FxHashMap<String, u32>),
    /// Unigram: `[[piece, score], …]`, ids by position.
    List(Vec<(String, f64)>),
}

/// Which model a `tokenizer.json` declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModelKind {
    Bpe,
    WordPiece,
    WordLevel,
    Unigram,
}

/// Token tables plus the facts the offsets and streaming code need.
pub(crate) struct Vocab {
    pub kind: ModelKind,
    /// id → token in the file's spelling; `None` for holes.
    pub tokens: Vec<Option<Box<str>>>,
    pub by_token: FxHashMap<Box<str>, u32>,
    pub special: Vec<bool>,
    /// Bytes each id stands for in normalized text (`None`: unknown length, e.g. `[UNK]`).
    pub normalized_len: Vec<Option<u32>>,
    /// Raw output bytes per id, when decoding is pure concatenation.
    pub decode_bytes: Option<Vec<Box<[u8]>>>,
}

impl Vocab {
    pub(crate) fn read(path: &Path, json: &serde_json::Value) -> Result<Self> {
        let view = FileView::deserialize(json).map_err(|e| Error::parse(path, e.to_string()))?;
        let kind = match view.model.kind.as_deref() {
            Some("BPE") | None => ModelKind::Bpe,
            Some("WordPiece") => ModelKind::WordPiece,
            Some("WordLevel") => ModelKind::WordLevel,
            Some("Unigram") => ModelKind::Unigram,
            Some(other) => {
                return Err(Error::parse(path, format!("unknown model type {other:?}")));
            }
        };
        let mut entries: Vec<(String, u32)> = match view.model.vocab {
            Some(VocabView::Map(map)) => map.into_iter().collect(),
            Some(VocabView::List(list)) => list
                .into_iter()
                .enumerate()
                .map(|(i, (piece, _))| Ok((piece, u32::try_from(i).map_err(|_| Error::parse(path, "vocab too large"))?)))
                .collect::<Result<_>>()?,
            None => Vec::new(),
        };
        let decoder_type = view
            .decoder
            .as_ref()
            .and_then(|d| d.get("type"))
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned);
        let byte_level = kind == ModelKind::Bpe && decoder_type.as_deref() == Some("ByteLevel");
        let n_model = entries.len();
        for t in &view.added_tokens {
            entries.push((t.content.clone(), t.id));
        }
        let size = entries
            .iter()
            .map(|(_, id)| *id as usize + 1)
            .max()
            .unwrap_or(0);
        let mut tokens: Vec<Option<Box<str>>> = vec![None; size];
        let mut by_token = FxHashMap::with_capacity_and_hasher(entries.len(), Default::default());
        let mut special = vec![false; size];
        let mut added = vec![false; size];
        for (i, (token, id)) in entries.into_iter().enumerate() {
            let token: Box<str> = token.into();
            by_token.insert(token.clone(), id);
            tokens[id as usize] = Some(token);
            if i >= n_model {
                added[id as usize] = true;
            }
        }
        for t in &view.added_tokens {
            special[t.id as usize] = t.special;
        }
        let prefix = view.model.continuing_subword_prefix.unwrap_or_default();
        let suffix = view.model.end_of_word_suffix.unwrap_or_default();
        let normalized_len = tokens
            .iter()
            .enumerate()
            .map(|(id, token)| {
                let token = token.as_deref()?;
                if added[id] {
                    return u32::try_from(token.len()).ok();
                }
                let len = match kind {
                    ModelKind::WordLevel => return None,
                    ModelKind::Bpe if byte_level => byte_level::unspell(token)?.len(),
                    _ if view.model.byte_fallback && is_byte_piece(token) => 1,
                    _ => {
                        let t = token.strip_prefix(prefix.as_str()).unwrap_or(token);
                        t.strip_suffix(suffix.as_str()).unwrap_or(t).len()
                    }
                };
                u32::try_from(len).ok()
            })
            .collect();
        let decode_bytes = byte_level.then(|| {
            tokens
                .iter()
                .enumerate()
                .map(|(id, token)| match token.as_deref() {
                    None => Box::default(),
                    Some(t) if added[id] => t.as_bytes().into(),
                    Some(t) => byte_level::unspell(t).unwrap_or_default().into(),
                })
                .collect()
        });
        Ok(Self {
            kind,
            tokens,
            by_token,
            special,
            normalized_len,
            decode_bytes,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.tokens.len()
    }

    pub(crate) fn contains(&self, id: u32) -> bool {
        self.tokens.get(id as usize).is_some_and(Option::is_some)
    }
}

/// `<0xAB>`: a SentencePiece byte-fallback piece.
fn is_byte_piece(token: &str) -> bool {
    token.len() == 6
        && token.starts_with("<0x")
        && token.ends_with('>')
        && token[3..5].bytes().all(|b| b.is_ascii_hexdigit())
}
