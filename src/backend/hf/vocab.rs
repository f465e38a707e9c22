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
use crate::limits;

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
        let kind = match view.model.kind.as_deref() {
            Some("BPE") | None => ModelKind::Bpe,
            Some("WordPiece") => ModelKind::WordPiece,
            Some("WordLevel") => ModelKind::WordLevel,
            Some("Unigram") => ModelKind::Unigram,
            Some(other) => {
                return Err(Error::parse(path, format!("unknown model type {other:?}")));
            }
        };
        let mut entries: Vec<(&str, u32)> = model_vocab(path, json)?;
        let decoder_type = view
            .decoder
            .as_ref()
            .and_then(|d| d.get("type"))
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned);
        let byte_level = kind == ModelKind::Bpe && decoder_type.as_deref() == Some("ByteLevel");
        let n_model = entries.len();
        // A BPE of added tokens only (`Tokenizer(BPE())` saved by the
        // reference) loads: its model is built as a stand-in
        // ([`super::assemble::stand_in`]), as tokenizers 1.0 panics building
        // an empty vocabulary store.
        if n_model == 0 && !matches!(kind, ModelKind::Unigram | ModelKind::Bpe) {
            return Err(Error::parse(
                path,
                format!(
                    "the {kind:?} model has an empty vocabulary ({} added tokens only), which tokenizers 1.0 cannot load",
                    view.added_tokens.len()
                ),
            ));
        }
        for t in &view.added_tokens {
            entries.push((t.content.as_str(), t.id));
        }
        check_entries(path, &entries)?;
        let merge_ids = if kind == ModelKind::Bpe {
            check_merges(
                path,
                &entries[..n_model],
                &view.model.merges,
                view.model.continuing_subword_prefix.as_deref(),
            )?
        } else {
            Vec::new()
        };
        let no_affix = |a: &Option<String>| a.as_deref().is_none_or(str::is_empty);
        let model = &view.model;
        let interim = match kind {
            // A byte-level BPE needs no interim engine: the crate's engine
            // below is its model step.
            ModelKind::Bpe
                if n_model > 0
                    && !byte_level
                    && model.byte_fallback
                    && no_affix(&model.continuing_subword_prefix)
                    && no_affix(&model.end_of_word_suffix) =>
            {
                InterimBpe::build(&entries[..n_model], &merge_ids, model.ignore_merges)
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
        };
        let byte_bpe = (byte_level
            && n_model > 0
            && model.dropout.is_none()
            && no_affix(&model.continuing_subword_prefix)
            && no_affix(&model.end_of_word_suffix))
        .then(|| byte_engine(&entries[..n_model], &merge_ids, model.ignore_merges))
        .flatten()
        .map(std::sync::Arc::new);
        drop(merge_ids);
        // A CJK cut must know the entries the model takes whole (invariant
        // `cut-where-no-entry-joins`).
        let cjk_cuts = |rebuilds: Rebuilds<'_>| {
            let cjk: Vec<Vec<u8>> = entries[..n_model]
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
        let prefix = view
            .model
            .continuing_subword_prefix
            .clone()
            .unwrap_or_default();
        let suffix = view.model.end_of_word_suffix.clone().unwrap_or_default();
        let decode_bytes: Option<Vec<Box<[u8]>>> = byte_level.then(|| {
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
        });
        // The model's `unk_token` stands for text of any length, whatever
        // roles the file's config names (none where there is no config),
        // and even when it is also an added token.
        let unk = view
            .model
            .unk_token
            .as_deref()
            .and_then(|u| by_token.get(u).copied());
        let unk_index = unk.and_then(|u| usize::try_from(u).ok());
        let normalized_len: Vec<Option<u32>> = tokens
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
                    ModelKind::Bpe if let Some(bytes) = &decode_bytes => {
                        bytes.get(id).map_or(token.len(), |b| b.len())
                    }
                    _ if view.model.byte_fallback && is_byte_piece(token) => 1,
                    _ => {
                        let t = token.strip_prefix(prefix.as_str()).unwrap_or(token);
                        t.strip_suffix(suffix.as_str()).unwrap_or(t).len()
                    }
                };
                u32::try_from(len).ok()
            })
            .collect();
        let fold_fixups = if byte_level && !view.model.ignore_merges {
            fold_fixups(&tokens, &by_token, &view.model.merges)
        } else {
            FxHashMap::default()
        };
        let suffix_words = if !byte_level && !view.model.ignore_merges && !suffix.is_empty() {
            suffix_words(&tokens, &added, &by_token, &view.model, &suffix, unk)
        } else {
            FxHashMap::default()
        };
        let byte_pieces = if view.decoder.as_ref().is_some_and(has_byte_fallback) {
            tokens
                .iter()
                .enumerate()
                .filter_map(|(id, t)| {
                    Some((u32::try_from(id).ok()?, byte_piece_value(t.as_deref()?)?))
                })
                .collect()
        } else {
            Vec::new()
        };
        let known_len = normalized_len
            .iter()
            .map(|l| l.and_then(|l| u16::try_from(l).ok()).unwrap_or(0))
            .collect();
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

/// The streaming table of the decoders that concatenate per-token bytes with
/// a rule at the start: `Replace(▁, " ")`, `ByteFallback`, `Fuse` and an
/// optional final `Strip(" ", 1, 0)` (Llama-2, Mistral, Gemma), and
/// `WordPiece` (its `cleanup` rewrites each token on its own). Every other
/// decoder is left to the windowed stream. `tests/it/stream.rs` checks each
/// table entry against `decode`.
fn stream_table(
    decoder: &serde_json::Value,
    kind: ModelKind,
    tokens: &[Option<Box<str>>],
    byte_pieces: &[(u32, u8)],
) -> Option<StreamTable> {
    let ty = |d: &serde_json::Value| {
        d.get("type")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    match ty(decoder).as_deref()? {
        "Sequence" => {
            let steps = decoder.get("decoders")?.as_array()?;
            let names: Vec<String> = steps.iter().map(ty).collect::<Option<_>>()?;
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let rule = match names.as_slice() {
                ["Replace", "ByteFallback", "Fuse"] => StartRule::None,
                ["Replace", "ByteFallback", "Fuse", "Strip"] => {
                    let strip = &steps[3];
                    let ok = strip.get("content").and_then(serde_json::Value::as_str) == Some(" ")
                        && strip.get("start").and_then(serde_json::Value::as_u64) == Some(1)
                        && strip.get("stop").and_then(serde_json::Value::as_u64) == Some(0);
                    if !ok {
                        return None;
                    }
                    StartRule::StripSpace
                }
                _ => return None,
            };
            let replace = &steps[0];
            let pattern = replace.get("pattern")?.get("String")?.as_str()?;
            let content = replace.get("content")?.as_str()?;
            if pattern != "\u{2581}" || content != " " {
                return None;
            }
            let bytes = tokens
                .iter()
                .enumerate()
                .map(|(id, t)| {
                    let Some(t) = t.as_deref() else {
                        return Box::default();
                    };
                    let byte = u32::try_from(id).ok().and_then(|id| {
                        byte_pieces
                            .binary_search_by_key(&id, |&(i, _)| i)
                            .ok()
                            .map(|i| byte_pieces[i].1)
                    });
                    match byte {
                        Some(b) => Box::from([b]),
                        None => t.replace('\u{2581}', " ").into_bytes().into(),
                    }
                })
                .collect();
            Some(StreamTable {
                rule,
                bytes,
                first: Vec::new(),
            })
        }
        "WordPiece" if kind == ModelKind::WordPiece => {
            let prefix = decoder.get("prefix")?.as_str()?;
            let cleanup = decoder.get("cleanup")?.as_bool()?;
            let render = |t: &str| -> Box<[u8]> {
                if cleanup {
                    wordpiece_cleanup(t).into_bytes().into()
                } else {
                    t.as_bytes().into()
                }
            };
            let mut bytes = Vec::with_capacity(tokens.len());
            let mut first = Vec::with_capacity(tokens.len());
            for t in tokens {
                let Some(t) = t.as_deref() else {
                    bytes.push(Box::default());
                    first.push(Box::default());
                    continue;
                };
                first.push(render(t));
                let joined = match t.strip_prefix(prefix) {
                    Some(rest) if !prefix.is_empty() => rest.to_owned(),
                    _ => format!(" {t}"),
                };
                bytes.push(render(&joined));
            }
            Some(StreamTable {
                rule: StartRule::FirstToken,
                bytes,
                first,
            })
        }
        _ => None,
    }
}

/// What `tokenizers`' WordPiece `cleanup` replaces, in its order.
const CLEANUP: [(&str, &str); 11] = [
    (" .", "."),
    (" ?", "?"),
    (" !", "!"),
    (" ,", ","),
    (" ' ", "'"),
    (" n't", "n't"),
    (" 'm", "'m"),
    (" do not", " don't"),
    (" 's", "'s"),
    (" 've", "'ve"),
    (" 're", "'re"),
];

/// `tokenizers`' WordPiece `cleanup`, applied to one token's text.
///
/// A text where no pattern occurs comes back unchanged (each replacement
/// then finds nothing, in turn), which is almost every token: checking that
/// at its spaces first saved a third of MiniLM's load (invariant `crate-steps-equal-reference`).
fn wordpiece_cleanup(s: &str) -> String {
    let occurs = s
        .match_indices(' ')
        .any(|(i, _)| CLEANUP.iter().any(|(from, _)| s[i..].starts_with(from)));
    if !occurs {
        return s.to_owned();
    }
    cleanup_chain(s)
}

/// `cleanup` as `tokenizers` writes it: every replacement, in order.
fn cleanup_chain(s: &str) -> String {
    CLEANUP
        .iter()
        .fold(s.to_owned(), |acc, (from, to)| acc.replace(from, to))
}

/// Token lengths and ids within what `tokenizers` stores and what the tables
/// built from them may cost (DESIGN.md invariant `hostile-input-bounded`); checked before either is
/// built.
fn check_entries(path: &Path, entries: &[(&str, u32)]) -> Result<()> {
    check_entry_iter(path, entries.iter().copied())
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

/// What `tokenizers`' BPE build needs to neither panic nor size a table by a
/// hostile id, on the tables [`super::assemble`] hands to
/// `PipelineBPE::from_config`: [`check_entries`], and for each merge the two
/// slice bounds its build relies on (the right side at least as long as
/// `continuing_subword_prefix`, the product no longer than the longest
/// entry). A side or product missing from the vocabulary is an error there,
/// not a panic, and [`Vocab::read`] reports it first (invariant `assembled-equals-from-json`). No
/// hashing:
/// this runs on the load's critical path.
pub(super) fn check_bpe_tables(
    path: &Path,
    vocab: &tokenizers::models::bpe::Vocab,
    merges: &[(String, String)],
    prefix: Option<&str>,
) -> Result<()> {
    if vocab.is_empty() {
        return Err(Error::parse(
            path,
            "the BPE model has an empty vocabulary, which tokenizers 1.0 cannot load",
        ));
    }
    check_entry_iter(path, vocab.iter().map(|(t, id)| (t.as_str(), *id)))?;
    let longest = vocab.keys().map(String::len).max().unwrap_or(0);
    let prefix_len = prefix.map_or(0, str::len);
    for (rank, (a, b)) in merges.iter().enumerate() {
        let fits = b
            .len()
            .checked_sub(prefix_len)
            .is_some_and(|rest| a.len() + rest <= longest);
        if !fits {
            return Err(Error::parse(
                path,
                format!("merge {rank} ({a:?} {b:?}): the merged token is not in the vocabulary"),
            ));
        }
    }
    Ok(())
}

fn check_entry_iter<'a>(
    path: &Path,
    entries: impl Iterator<Item = (&'a str, u32)> + Clone,
) -> Result<()> {
    if let Some((token, _)) = entries
        .clone()
        .find(|(t, _)| t.len() > limits::MAX_TOKEN_BYTES)
    {
        return Err(limits::refused(
            path,
            format!(
                "a vocabulary token is {} bytes long (the limit is {})",
                token.len(),
                limits::MAX_TOKEN_BYTES
            ),
        ));
    }
    let count = entries.clone().count();
    let max_id = entries.map(|(_, id)| u64::from(id)).max().unwrap_or(0);
    limits::check_id(path, "token", max_id, count)
}

/// Every merge must join two vocabulary entries into a third: `tokenizers`
/// 1.0.0-rc.3 slices the right side past `continuing_subword_prefix` and
/// copies the result into a buffer sized by the longest entry before it looks
/// the result up, so a bad merge panics there instead of failing.
fn check_merges(
    path: &Path,
    model_entries: &[(&str, u32)],
    merges: &[MergeView],
    prefix: Option<&str>,
) -> Result<Vec<[u32; 3]>> {
    if merges.is_empty() {
        return Ok(Vec::new());
    }
    let vocab: FxHashMap<&str, u32> = model_entries.iter().copied().collect();
    let prefix_len = prefix.map_or(0, str::len);
    let mut merged = String::new();
    let mut ids = Vec::with_capacity(merges.len());
    for (rank, merge) in merges.iter().enumerate() {
        let Some((a, b)) = merge.pair() else {
            return Err(Error::parse(
                path,
                format!("merge {rank} is not a pair of tokens"),
            ));
        };
        let bad = |why: &str| Error::parse(path, format!("merge {rank} ({a:?} {b:?}): {why}"));
        let (Some(&left), Some(&right)) = (vocab.get(a), vocab.get(b)) else {
            return Err(bad("a side is not in the vocabulary"));
        };
        let rest = b
            .get(prefix_len..)
            .ok_or_else(|| bad("the right side is shorter than continuing_subword_prefix"))?;
        merged.clear();
        merged.push_str(a);
        merged.push_str(rest);
        let Some(&joined) = vocab.get(merged.as_str()) else {
            return Err(bad("the merged token is not in the vocabulary"));
        };
        ids.push([left, right, joined]);
    }
    Ok(ids)
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

/// Works around a `tokenizers` 1.0.0-rc.3 bug. Some byte-level vocabularies
/// (Command-R+) hold entries written as plain characters outside the byte-level
/// alphabet, e.g. `☪` (id 320). `tokenizers` 0.x can never produce them, since
/// merges build byte-level spellings; 1.0 stores them as their UTF-8 bytes and
/// its load-time fold proof marks every one-character entry reachable, so a
/// pre-token `☪` comes out as 320 instead of the merged bytes `âĺ`,`ª`. Such an
/// id can only come from that fold, so replacing it with the merge result is
/// exact. Returns those ids with their merge results.
fn fold_fixups(
    tokens: &[Option<Box<str>>],
    by_token: &FxHashMap<Box<str>, u32>,
    merges: &[MergeView],
) -> FxHashMap<u32, Vec<u32>> {
    let candidates: Vec<(usize, &str)> = tokens
        .iter()
        .enumerate()
        .filter_map(|(id, token)| Some((id, token.as_deref()?)))
        .filter(|&(_, token)| {
            token.len() >= 2 && token.chars().count() == 1 && byte_level::unspell(token).is_none()
        })
        .collect();
    // Most vocabularies have none: the rank map is built only for them.
    if candidates.is_empty() {
        return FxHashMap::default();
    }
    let ranks: FxHashMap<(&str, &str), usize> = merges
        .iter()
        .enumerate()
        .filter_map(|(rank, m)| Some((m.pair()?, rank)))
        .collect();
    let alphabet = byte_level::byte_to_char_table();
    let mut out = FxHashMap::default();
    for (id, token) in candidates {
        // Plain BPE over the byte-level spelling of the character (2–4 symbols).
        let spelled = byte_level::spell(token.as_bytes(), &alphabet);
        let symbols: Vec<String> = spelled.chars().map(String::from).collect();
        let ids = merged_ids(symbols, by_token, &ranks);
        if let (Some(ids), Ok(id)) = (ids, u32::try_from(id)) {
            out.insert(id, ids);
        }
    }
    out
}

/// Works around a second fold bug of `tokenizers` 1.0.0-rc.3, in BPE models
/// with an `end_of_word_suffix` (CLIP, openai-gpt, `CharBPETokenizer`): its
/// load-time fold proof takes every one-character entry `c` for the encoding
/// of the word `c`, but a word's last character carries the suffix, so the
/// word `a` is `a</w>` (`tokenizers` 0.x, the reference), not `a`. Only a
/// one-character entry can be folded wrongly (a longer entry is proven by
/// merging its own, decorated, text), so the answer for each such character
/// is made here as 0.x's `merge_word` makes it: the entry `c` + suffix; else
/// its `<0xNN>` byte pieces (with `byte_fallback`, when all exist) merged by
/// rank; else `unk` (the model's `unk_token`); else nothing. The chunk walk hands these words
/// to the model never (`chunk::tokenize_spans`).
fn suffix_words(
    tokens: &[Option<Box<str>>],
    added: &[bool],
    by_token: &FxHashMap<Box<str>, u32>,
    model: &ModelView<'_>,
    suffix: &str,
    unk: Option<u32>,
) -> FxHashMap<char, Vec<u32>> {
    let ranks: FxHashMap<(&str, &str), usize> = if model.byte_fallback {
        model
            .merges
            .iter()
            .enumerate()
            .filter_map(|(rank, m)| Some((m.pair()?, rank)))
            .collect()
    } else {
        FxHashMap::default()
    };
    let mut out = FxHashMap::default();
    for (id, token) in tokens.iter().enumerate() {
        let Some(token) = token.as_deref() else {
            continue;
        };
        let mut chars = token.chars();
        let (Some(c), None) = (chars.next(), chars.next()) else {
            continue;
        };
        if added.get(id).copied().unwrap_or(true) {
            continue;
        }
        let mut buf = [0u8; 4];
        let decorated = format!("{}{suffix}", c.encode_utf8(&mut buf));
        let ids = if let Some(&id) = by_token.get(decorated.as_str()) {
            vec![id]
        } else if let Some(ids) = model
            .byte_fallback
            .then(|| merged_byte_pieces(c, by_token, &ranks))
            .flatten()
        {
            ids
        } else {
            unk.into_iter().collect()
        };
        out.insert(c, ids);
    }
    out
}

/// The `<0xNN>` pieces of `c`'s UTF-8 bytes merged by rank, as 0.x's BPE
/// merges any symbols; `None` when a piece is missing.
fn merged_byte_pieces(
    c: char,
    by_token: &FxHashMap<Box<str>, u32>,
    ranks: &FxHashMap<(&str, &str), usize>,
) -> Option<Vec<u32>> {
    let mut buf = [0u8; 4];
    let symbols: Vec<String> = c
        .encode_utf8(&mut buf)
        .bytes()
        .map(|b| format!("<0x{b:02X}>"))
        .collect();
    merged_ids(symbols, by_token, ranks)
}

/// Plain BPE over a few symbols (the lowest-ranked pair first, leftmost on
/// ties), then each merged symbol's id; `None` when one has none.
fn merged_ids(
    mut symbols: Vec<String>,
    by_token: &FxHashMap<Box<str>, u32>,
    ranks: &FxHashMap<(&str, &str), usize>,
) -> Option<Vec<u32>> {
    loop {
        let best = symbols
            .windows(2)
            .enumerate()
            .filter_map(|(i, w)| ranks.get(&(w[0].as_str(), w[1].as_str())).map(|&r| (r, i)))
            .min();
        let Some((_, i)) = best else { break };
        let right = symbols.remove(i + 1);
        symbols[i].push_str(&right);
    }
    symbols
        .iter()
        .map(|s| by_token.get(s.as_str()).copied())
        .collect()
}

/// `<0xAB>`: a SentencePiece byte-fallback piece.
fn is_byte_piece(token: &str) -> bool {
    token.len() == 6
        && token.starts_with("<0x")
        && token.ends_with('>')
        && token[3..5].bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]
        /// The shortcut (no pattern occurs: unchanged) gives the chain's text.
        #[test]
        fn cleanup_shortcut_equals_the_chain(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just(" "), Just("."), Just("?"), Just("!"), Just(","), Just("'"),
                    Just("n't"), Just("m"), Just("do"), Just("not"), Just("s"),
                    Just("ve"), Just("re"), Just("a"), Just("##"), Just("\u{e9}"),
                ],
                0..12,
            )
        ) {
            let s: String = parts.concat();
            prop_assert_eq!(wordpiece_cleanup(&s), cleanup_chain(&s));
            let joined = format!(" {s}");
            prop_assert_eq!(wordpiece_cleanup(&joined), cleanup_chain(&joined));
        }
    }
}
