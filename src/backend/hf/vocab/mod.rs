//! The id ↔ token tables of a `tokenizer.json`, read once at load.
//!
//! `tokenizers` 1.0's read-only pipeline has no public vocabulary iteration or
//! token → id lookup for BPE, so the loader reads `model.vocab` and
//! `added_tokens` itself (serde skips everything else in the file).

use rustc_hash::FxHashMap;

use crate::backend::bpe::ByteBpe;
use serde::Deserialize;
use std::path::Path;

use tokenizers::pipeline::PipelineToken;

use super::interim::{InterimBpe, InterimModel, InterimWordPiece};
use crate::backend::char_cuts::{CharCuts, Rebuilds};
use crate::backend::{StartRule, byte_level};
use crate::error::{Error, Result};

mod check;
mod fixups;
mod stream;

pub(super) use check::check_bpe_tables;
use check::{check_entries, check_merges};
use fixups::{fold_fixups, suffix_words};
use stream::stream_table;

/// What the load reads of the document, its strings borrowed from the
/// parsed value: `model.vocab` is read apart (no map is built to be
/// flattened again), and merges are only checked and looked up.
#[derive(Deserialize)]
struct FileView<'a> {
    #[serde(default)]
    added_tokens: Vec<AddedTokenView>,
    #[serde(borrow)]
    model: ModelView<'a>,
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
struct ModelView<'a> {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    continuing_subword_prefix: Option<String>,
    #[serde(default)]
    end_of_word_suffix: Option<String>,
    #[serde(default)]
    byte_fallback: bool,
    #[serde(default)]
    ignore_merges: bool,
    #[serde(default)]
    dropout: Option<f64>,
    #[serde(default)]
    unk_token: Option<String>,
    #[serde(default)]
    max_input_chars_per_word: Option<usize>,
    #[serde(default, borrow)]
    merges: Vec<MergeView<'a>>,
}

/// A merge as the file spells it: `"a b"` (legacy) or `["a", "b"]`.
enum MergeView<'a> {
    Joined(&'a str),
    Pair((&'a str, &'a str)),
}

/// By hand rather than `#[serde(untagged)]`, which buffers every entry
/// before trying each form (a tenth of a 280,000-merge load).
impl<'de: 'a, 'a> Deserialize<'de> for MergeView<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = MergeView<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a merge: \"a b\" or [\"a\", \"b\"]")
            }
            fn visit_borrowed_str<E: serde::de::Error>(
                self,
                s: &'de str,
            ) -> std::result::Result<Self::Value, E> {
                Ok(MergeView::Joined(s))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                let a: &'a str = seq
                    .next_element()?
                    .ok_or_else(|| serde::de::Error::invalid_length(0, &self))?;
                let b: &'a str = seq
                    .next_element()?
                    .ok_or_else(|| serde::de::Error::invalid_length(1, &self))?;
                if seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    return Err(serde::de::Error::invalid_length(3, &self));
                }
                Ok(MergeView::Pair((a, b)))
            }
        }
        d.deserialize_any(Visit(std::marker::PhantomData))
    }
}

impl MergeView<'_> {
    fn pair(&self) -> Option<(&str, &str)> {
        match self {
            Self::Joined(s) => s.split_once(' '),
            Self::Pair((a, b)) => Some((*a, *b)),
        }
    }
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
    /// The ids of the file's `added_tokens`, in file order.
    pub added: Vec<u32>,
    /// Bytes each id stands for in normalized text (`None`: unknown length, e.g. `[UNK]`).
    pub normalized_len: Vec<Option<u32>>,
    /// The same lengths in two bytes (0: unknown, empty or longer than
    /// `u16::MAX`): the chunk encoder's span walks read one per token, and
    /// a quarter of the table stays in cache.
    pub known_len: Box<[u16]>,
    /// Raw output bytes per id, when decoding is pure concatenation.
    pub decode_bytes: Option<Vec<Box<[u8]>>>,
    /// Ids `tokenizers` 1.0 emits wrongly, with the ids the merges give instead.
    pub fold_fixups: FxHashMap<u32, Vec<u32>>,
    /// One-character words of a BPE with an `end_of_word_suffix`, with their
    /// ids, for every character `tokenizers` 1.0 would answer wrongly
    /// ([`suffix_words`]); empty for every other model.
    pub suffix_words: FxHashMap<char, Vec<u32>>,
    /// `(id, byte)` of every `<0xNN>` token, sorted by id, when the decoder has
    /// a `ByteFallback` step (which reassembles their runs); else empty.
    pub byte_pieces: Vec<(u32, u8)>,
    /// Per-id output bytes for streaming, when the decoder is concatenation
    /// plus a rule at the start of the text ([`StreamTable`]): made on first
    /// use ([`stream`](Self::stream)), two allocations a token that a load
    /// need not wait for (a tenth of MiniLM's).
    stream: std::sync::OnceLock<Option<StreamTable>>,
    /// The file's decoder, which [`stream`](Self::stream) reads.
    decoder: Option<serde_json::Value>,
    /// Where a CJK pre-token may be cut for the model (invariant `cut-where-no-entry-joins`): a
    /// byte-level BPE's only.
    pub cuts: Option<CharCuts>,
    /// For a BPE with an empty `model.vocab`: the model's `unk_token`, if
    /// any (`Some(None)`: none). Its model is a stand-in whose ids lie past
    /// the file's: where the reference's model gives nothing for a word, or
    /// fails for want of its unknown token ([`Self::model_ids`]).
    pub empty_model: Option<Option<String>>,
    /// The engine that encodes while the model builds (invariant `interim-equals-built`),
    /// built here from the tables this read holds (a BPE's from the ids the
    /// merge check looks up anyway); taken by the load.
    pub interim: Option<InterimModel>,
    /// The crate's byte-level BPE engine, for a byte-level model without
    /// dropout or affixes: every encode's model step once the load chose
    /// it (`HfBackend::new`).
    pub byte_bpe: Option<std::sync::Arc<ByteBpe>>,
}

/// The byte-level engine of `entries` (byte-level spellings; one that is
/// not spells no pre-token and is left out) and `merges` (`[left, right,
/// merged]` in rank order).
fn byte_engine(
    entries: &[(&str, u32)],
    merges: &[[u32; 3]],
    ignore_merges: bool,
) -> Option<ByteBpe> {
    let mut arena = Vec::with_capacity(entries.len() * 8);
    let mut spans = Vec::with_capacity(entries.len());
    for &(token, id) in entries {
        let start = arena.len();
        let spelled = token.chars().all(|c| match byte_level::char_to_byte(c) {
            Some(b) => {
                arena.push(b);
                true
            }
            None => false,
        });
        if spelled {
            spans.push((start, arena.len(), id));
        } else {
            arena.truncate(start);
        }
    }
    let vocab = spans
        .iter()
        .filter_map(|&(s, e, id)| Some((arena.get(s..e)?, id)));
    ByteBpe::build(vocab, merges, ignore_merges)
}

/// What [`DecodeStyle::ByteConcatWithStart`] needs: per-id bytes, the start
/// rule, and the bytes of a first token where they differ.
pub(crate) struct StreamTable {
    pub rule: StartRule,
    pub bytes: Vec<Box<[u8]>>,
    /// For [`StartRule::FirstToken`]; empty otherwise.
    pub first: Vec<Box<[u8]>>,
}

impl Vocab {
    pub(crate) fn read(path: &Path, json: &serde_json::Value) -> Result<Self> {
        let view = FileView::deserialize(json).map_err(|e| Error::parse(path, e.to_string()))?;
        let model = &view.model;
        let kind = model_kind(path, model)?;
        let mut entries: Vec<(&str, u32)> = model_vocab(path, json)?;
        let decoder_type = view
            .decoder
            .as_ref()
            .and_then(|d| d.get("type"))
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned);
        let byte_level = kind == ModelKind::Bpe && decoder_type.as_deref() == Some("ByteLevel");
        let n_model = entries.len();
        refuse_empty(path, kind, n_model, view.added_tokens.len())?;
        for t in &view.added_tokens {
            entries.push((t.content.as_str(), t.id));
        }
        check_entries(path, &entries)?;
        let merge_ids = if kind == ModelKind::Bpe {
            check_merges(
                path,
                &entries[..n_model],
                &model.merges,
                model.continuing_subword_prefix.as_deref(),
            )?
        } else {
            Vec::new()
        };
        let interim = interim_engine(kind, model, &entries, n_model, byte_level, &merge_ids);
        // The engine and the id tables are independent reads of the
        // entries: they are built side by side (a third of a large
        // vocabulary's load).
        let ((byte_bpe, cuts), ids) = rayon::join(
            || byte_engines(model, &entries[..n_model], merge_ids, byte_level),
            || IdTables::new(entries.clone(), n_model, &view, kind, byte_level),
        );
        let IdTables {
            tokens,
            by_token,
            special,
            decode_bytes,
            normalized_len,
            known_len,
            fold_fixups,
            suffix_words,
            byte_pieces,
        } = ids;
        let empty_model = (n_model == 0 && kind == ModelKind::Bpe).then(|| model.unk_token.clone());
        Ok(Self {
            cuts,
            byte_bpe,
            empty_model,
            added: view.added_tokens.iter().map(|t| t.id).collect(),
            interim,
            stream: std::sync::OnceLock::new(),
            decoder: view.decoder,
            byte_pieces,
            fold_fixups,
            suffix_words,
            kind,
            tokens,
            by_token,
            special,
            normalized_len,
            known_len,
            decode_bytes,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.tokens.len()
    }

    /// The streaming table ([`StreamTable`]), made on the first call.
    pub(crate) fn stream(&self) -> Option<&StreamTable> {
        self.stream
            .get_or_init(|| {
                let decoder = self.decoder.as_ref()?;
                stream_table(decoder, self.kind, &self.tokens, &self.byte_pieces)
            })
            .as_ref()
    }

    pub(crate) fn contains(&self, id: u32) -> bool {
        self.tokens.get(id as usize).is_some_and(Option::is_some)
    }

    /// The model's ids in `tokens[first..]` as the reference's BPE over an
    /// empty vocabulary gives them ([`Self::empty_model`]): a word it was
    /// handed is dropped, or with an `unk_token` it fails, as that token is
    /// in no model vocabulary. Only the stand-in's ids (outside the file's)
    /// come from such words; nothing changes for any other model.
    pub(crate) fn model_ids(&self, tokens: &mut Vec<PipelineToken>, first: usize) -> Result<()> {
        let Some(unk) = &self.empty_model else {
            return Ok(());
        };
        let Some(rest) = tokens.get(first..) else {
            return Ok(());
        };
        if rest.iter().all(|t| self.contains(t.id())) {
            return Ok(());
        }
        if let Some(unk) = unk {
            return Err(Error::backend(
                super::NAME,
                format!("Unk token `{unk}` not found in the vocabulary"),
            ));
        }
        let kept: Vec<PipelineToken> = tokens
            .drain(first..)
            .filter(|t| self.contains(t.id()))
            .collect();
        tokens.extend(kept);
        Ok(())
    }

    /// The byte a `<0xNN>` token stands for, when the decoder reassembles them.
    pub(crate) fn byte_piece(&self, id: u32) -> Option<u8> {
        let i = self
            .byte_pieces
            .binary_search_by_key(&id, |&(i, _)| i)
            .ok()?;
        self.byte_pieces.get(i).map(|&(_, b)| b)
    }
}

/// The model a `tokenizer.json` declares (`BPE` where it names none).
fn model_kind(path: &Path, model: &ModelView<'_>) -> Result<ModelKind> {
    Ok(match model.kind.as_deref() {
        Some("BPE") | None => ModelKind::Bpe,
        Some("WordPiece") => ModelKind::WordPiece,
        Some("WordLevel") => ModelKind::WordLevel,
        Some("Unigram") => ModelKind::Unigram,
        Some(other) => {
            return Err(Error::parse(path, format!("unknown model type {other:?}")));
        }
    })
}

/// A model with an empty vocabulary is refused but for a BPE or a Unigram.
/// A BPE of added tokens only (`Tokenizer(BPE())` saved by the reference)
/// loads: its model is built as a stand-in ([`super::assemble::stand_in`]),
/// as tokenizers 1.0 panics building an empty vocabulary store.
fn refuse_empty(path: &Path, kind: ModelKind, n_model: usize, n_added: usize) -> Result<()> {
    if n_model == 0 && !matches!(kind, ModelKind::Unigram | ModelKind::Bpe) {
        return Err(Error::parse(
            path,
            format!(
                "the {kind:?} model has an empty vocabulary ({n_added} added tokens only), which tokenizers 1.0 cannot load"
            ),
        ));
    }
    Ok(())
}

/// Whether a model has no continuing-subword prefix or end-of-word suffix
/// (absent or empty).
fn no_affix(a: &Option<String>) -> bool {
    a.as_deref().is_none_or(str::is_empty)
}

/// The engine that encodes while the model builds (invariant
/// `interim-equals-built`), from the `entries` (the model's first, `n_model`
/// of them, then the added tokens) and the checked merges' ids.
fn interim_engine(
    kind: ModelKind,
    model: &ModelView<'_>,
    entries: &[(&str, u32)],
    n_model: usize,
    byte_level: bool,
    merge_ids: &[[u32; 3]],
) -> Option<InterimModel> {
    match kind {
        // A byte-level BPE needs no interim engine: the crate's engine
        // below is its model step.
        ModelKind::Bpe
            if n_model > 0
                && !byte_level
                && model.byte_fallback
                && no_affix(&model.continuing_subword_prefix)
                && no_affix(&model.end_of_word_suffix) =>
        {
            InterimBpe::build(&entries[..n_model], merge_ids, model.ignore_merges)
                .map(|bpe| InterimModel::Bpe(Box::new(bpe)))
        }
        ModelKind::WordPiece => match (
            &model.continuing_subword_prefix,
            &model.unk_token,
            model.max_input_chars_per_word,
        ) {
            (Some(prefix), Some(unk), Some(max_chars)) => InterimWordPiece::build(
                &entries[..n_model],
                &entries[n_model..],
                prefix,
                unk,
                max_chars,
            )
            .map(InterimModel::WordPiece),
            _ => None,
        },
        _ => None,
    }
}

/// The crate's byte-level engine of a byte-level BPE without dropout or
/// affixes, and the CJK cuts made from it; the merges' ids are freed
/// between the two.
fn byte_engines(
    model: &ModelView<'_>,
    model_entries: &[(&str, u32)],
    merge_ids: Vec<[u32; 3]>,
    byte_level: bool,
) -> (Option<std::sync::Arc<ByteBpe>>, Option<CharCuts>) {
    let byte_bpe = (byte_level
        && !model_entries.is_empty()
        && model.dropout.is_none()
        && no_affix(&model.continuing_subword_prefix)
        && no_affix(&model.end_of_word_suffix))
    .then(|| byte_engine(model_entries, &merge_ids, model.ignore_merges))
    .flatten()
    .map(std::sync::Arc::new);
    drop(merge_ids);
    // A CJK cut must know the entries the model takes whole (invariant
    // `cut-where-no-entry-joins`).
    let cjk_cuts = |rebuilds: Rebuilds<'_>| {
        let cjk: Vec<Vec<u8>> = model_entries
            .iter()
            .filter(|(t, _)| t.chars().any(|c| ('\u{e3}'..='\u{e9}').contains(&c)))
            .filter_map(|(t, _)| byte_level::unspell(t))
            .collect();
        CharCuts::build(
            cjk.iter().map(Vec::as_slice),
            model.ignore_merges.then_some(rebuilds),
        )
    };
    let cuts = byte_bpe
        .as_ref()
        .and_then(|bpe| cjk_cuts(&|word: &[u8]| bpe.rebuilds(word)));
    (byte_bpe, cuts)
}

/// Everything [`Vocab::read`] derives from the entries by id, beside the
/// byte-level engine.
struct IdTables {
    tokens: Vec<Option<Box<str>>>,
    by_token: FxHashMap<Box<str>, u32>,
    special: Vec<bool>,
    decode_bytes: Option<Vec<Box<[u8]>>>,
    normalized_len: Vec<Option<u32>>,
    known_len: Box<[u16]>,
    fold_fixups: FxHashMap<u32, Vec<u32>>,
    suffix_words: FxHashMap<char, Vec<u32>>,
    byte_pieces: Vec<(u32, u8)>,
}

impl IdTables {
    fn new(
        entries: Vec<(&str, u32)>,
        n_model: usize,
        view: &FileView,
        kind: ModelKind,
        byte_level: bool,
    ) -> Self {
        let model = &view.model;
        let Tables {
            tokens,
            by_token,
            special,
            added,
        } = Tables::new(entries, n_model, &view.added_tokens);
        let prefix = model.continuing_subword_prefix.clone().unwrap_or_default();
        let suffix = model.end_of_word_suffix.clone().unwrap_or_default();
        let decode_bytes = byte_level.then(|| decode_bytes(&tokens, &added));
        // The model's `unk_token` stands for text of any length, whatever
        // roles the file's config names (none where there is no config),
        // and even when it is also an added token.
        let unk = model
            .unk_token
            .as_deref()
            .and_then(|u| by_token.get(u).copied());
        let affixes = (prefix.as_str(), suffix.as_str());
        let normalized_len = normalized_lens(
            &tokens,
            &added,
            kind,
            model,
            decode_bytes.as_deref(),
            unk,
            affixes,
        );
        let fold_fixups = if byte_level && !model.ignore_merges {
            fold_fixups(&tokens, &by_token, &model.merges)
        } else {
            FxHashMap::default()
        };
        let suffix_words = if !byte_level && !model.ignore_merges && !suffix.is_empty() {
            suffix_words(&tokens, &added, &by_token, model, &suffix, unk)
        } else {
            FxHashMap::default()
        };
        let byte_pieces = if view.decoder.as_ref().is_some_and(has_byte_fallback) {
            byte_pieces(&tokens)
        } else {
            Vec::new()
        };
        let known_len = normalized_len
            .iter()
            .map(|l| l.and_then(|l| u16::try_from(l).ok()).unwrap_or(0))
            .collect();
        Self {
            tokens,
            by_token,
            special,
            decode_bytes,
            normalized_len,
            known_len,
            fold_fixups,
            suffix_words,
            byte_pieces,
        }
    }
}

/// The id-indexed tables of the entries, filled in one pass.
struct Tables {
    tokens: Vec<Option<Box<str>>>,
    by_token: FxHashMap<Box<str>, u32>,
    special: Vec<bool>,
    /// Whether each id is an added token's.
    added: Vec<bool>,
}

impl Tables {
    /// From `entries` (the model's first, `n_model` of them, then the added
    /// tokens), and the added tokens' `special` flags.
    fn new(entries: Vec<(&str, u32)>, n_model: usize, added_tokens: &[AddedTokenView]) -> Self {
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
        for t in added_tokens {
            special[t.id as usize] = t.special;
        }
        Self {
            tokens,
            by_token,
            special,
            added,
        }
    }
}

/// A byte-level BPE's output bytes per id: an added token's text as it is,
/// an entry's byte-level spelling unspelled.
fn decode_bytes(tokens: &[Option<Box<str>>], added: &[bool]) -> Vec<Box<[u8]>> {
    tokens
        .iter()
        .enumerate()
        .map(|(id, token)| match token.as_deref() {
            None => Box::default(),
            Some(t) if added[id] => t.as_bytes().into(),
            // Entries outside the byte-level alphabet decode as their UTF-8 bytes.
            Some(t) => byte_level::unspell(t)
                .unwrap_or_else(|| t.as_bytes().to_vec())
                .into(),
        })
        .collect()
}

/// [`Vocab::normalized_len`]: the bytes each id stands for in normalized
/// text, `None` for the unknown token (`unk`) and where it cannot be known;
/// `affixes` are the model's prefix and suffix, stripped from its entries.
fn normalized_lens(
    tokens: &[Option<Box<str>>],
    added: &[bool],
    kind: ModelKind,
    model: &ModelView<'_>,
    decode_bytes: Option<&[Box<[u8]>]>,
    unk: Option<u32>,
    (prefix, suffix): (&str, &str),
) -> Vec<Option<u32>> {
    let unk_index = unk.and_then(|u| usize::try_from(u).ok());
    tokens
        .iter()
        .enumerate()
        .map(|(id, token)| {
            let token = token.as_deref()?;
            if Some(id) == unk_index {
                return None;
            }
            if added[id] {
                return u32::try_from(token.len()).ok();
            }
            let len = match kind {
                ModelKind::WordLevel => return None,
                // The bytes the entry decodes to (unspelled once, there).
                ModelKind::Bpe if let Some(bytes) = decode_bytes => {
                    bytes.get(id).map_or(token.len(), |b| b.len())
                }
                _ if model.byte_fallback && is_byte_piece(token) => 1,
                _ => {
                    let t = token.strip_prefix(prefix).unwrap_or(token);
                    t.strip_suffix(suffix).unwrap_or(t).len()
                }
            };
            u32::try_from(len).ok()
        })
        .collect()
}

/// `(id, byte)` of every `<0xNN>` token, sorted by id ([`Vocab::byte_pieces`]).
fn byte_pieces(tokens: &[Option<Box<str>>]) -> Vec<(u32, u8)> {
    tokens
        .iter()
        .enumerate()
        .filter_map(|(id, t)| Some((u32::try_from(id).ok()?, byte_piece_value(t.as_deref()?)?)))
        .collect()
}

/// The id of a `model.vocab` map entry; `None` if it is not a `u32`.
pub(super) fn entry_id(id: &serde_json::Value) -> Option<u32> {
    id.as_u64().and_then(|id| u32::try_from(id).ok())
}

/// `model.vocab`: a map of token → id (BPE, WordPiece, WordLevel) or a
/// Unigram list of `[piece, score]`, ids by position.
fn model_vocab<'a>(path: &Path, json: &'a serde_json::Value) -> Result<Vec<(&'a str, u32)>> {
    use serde_json::Value;
    let bad = |what: String| Error::parse(path, what);
    match json.get("model").and_then(|m| m.get("vocab")) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(token, id)| {
                let id = entry_id(id)
                    .ok_or_else(|| bad(format!("vocab entry {token:?} has a bad id")))?;
                Ok((token.as_str(), id))
            })
            .collect(),
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .map(|(i, entry)| match entry.as_array().map(Vec::as_slice) {
                Some([Value::String(piece), score]) if score.is_number() => Ok((
                    piece.as_str(),
                    u32::try_from(i).map_err(|_| bad("vocab too large".to_owned()))?,
                )),
                _ => Err(bad(format!("vocab entry {i} is not a [piece, score] pair"))),
            })
            .collect(),
        Some(_) => Err(bad("model.vocab is neither a map nor a list".to_owned())),
    }
}

/// Whether a decoder (or a `Sequence` of them) has a `ByteFallback` step.
fn has_byte_fallback(decoder: &serde_json::Value) -> bool {
    match decoder.get("type").and_then(serde_json::Value::as_str) {
        Some("ByteFallback") => true,
        Some("Sequence") => decoder
            .get("decoders")
            .and_then(serde_json::Value::as_array)
            .is_some_and(|steps| steps.iter().any(has_byte_fallback)),
        _ => false,
    }
}

/// The byte of a `<0xNN>` token, read exactly as `tokenizers`' `ByteFallback`
/// decoder reads it (`from_str_radix` also takes lower case and `<0x+A>`).
fn byte_piece_value(token: &str) -> Option<u8> {
    if token.len() != 6 || !token.starts_with("<0x") || !token.ends_with('>') {
        return None;
    }
    u8::from_str_radix(token.get(3..5)?, 16).ok()
}

/// `<0xAB>`: a SentencePiece byte-fallback piece.
fn is_byte_piece(token: &str) -> bool {
    token.len() == 6
        && token.starts_with("<0x")
        && token.ends_with('>')
        && token[3..5].bytes().all(|b| b.is_ascii_hexdigit())
}
