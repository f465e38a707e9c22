//! Builds a `tokenizer.json` BPE pipeline with one model build, with the
//! word-cache size this crate chooses (DESIGN.md invariant `assembled-equals-from-json`).
//!
//! `tokenizers::from_json` re-parses the whole file and builds the BPE model
//! with a fixed 65,536-slot word cache per thread, which thrashes on long
//! documents (`docs/perf/design_log/tokenizer_json.md` (entry 248)). Here the model is built once
//! with
//! `PipelineBPE::from_config` from the vocabulary and merges this crate has
//! already parsed, and every other component comes from `tokenizers`' own
//! reader run on the file with the vocabulary and merges taken out (a
//! *skeleton*, a few KB): the reader stays the one authority on what the
//! normalizers, pre-tokenizer, post-processor and decoder mean. Only the
//! normalizers (not `Clone`) are rebuilt here, and they are used only when
//! their `Debug` form equals the reader's. Anything this module does not
//! recognise returns `None`, and the caller takes the plain `from_json` path.
//!
//! Performance notes: the skeleton is canonicalised instead of the whole
//! document, and the caller runs this build beside [`super::vocab::Vocab::read`]
//! (`rayon::join`), so load time is about the model build alone.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use tokenizers::decoders::DecoderRuntime;
use tokenizers::models::bpe::{BpeConfig, Merges, PipelineBPE, Vocab as BpeVocab};
use tokenizers::normalizers::prepend::Prepend;
use tokenizers::normalizers::replace::{Replace, ReplacePattern};
use tokenizers::normalizers::strip::Strip;
use tokenizers::normalizers::unicode::{NFC, NFD, NFKC, NFKD};
use tokenizers::normalizers::utils::Lowercase;
use tokenizers::pipeline::{
    NormalizerChain, PipelineModel, PipelineNormalizer, PipelinePostProcessor,
    PipelinePreTokenizer, PipelineTokenizer,
};
use tokenizers::vocab::bucket_added_vocabulary::{
    AddedToken, AddedVocabulary as BucketAddedVocabulary,
};

use super::interim::{InterimBpe, InterimModel};
use super::no_panic;
use super::vocab::{check_bpe_tables, entry_id};
use crate::backend::{BuildCancel, byte_level};
use crate::error::{Error, Result};

/// The document with `model.vocab` and `model.merges` replaced by empty
/// values of the same JSON kind (what `canonicalize_value` looks at).
pub(super) fn skeleton(value: &Value) -> Value {
    let Some(root) = value.as_object() else {
        return value.clone();
    };
    let mut out = Map::with_capacity(root.len());
    for (key, v) in root {
        let v = match (key.as_str(), v.as_object()) {
            ("model", Some(model)) => {
                let mut m = Map::with_capacity(model.len());
                for (k, mv) in model {
                    let mv = match (k.as_str(), mv) {
                        ("vocab" | "merges", Value::Array(_)) => Value::Array(Vec::new()),
                        ("vocab", Value::Object(_)) => Value::Object(Map::new()),
                        _ => mv.clone(),
                    };
                    m.insert(k.clone(), mv);
                }
                Value::Object(m)
            }
            _ => v.clone(),
        };
        out.insert(key.clone(), v);
    }
    Value::Object(out)
}

/// `canonical` (a skeleton) with `full`'s `model.vocab` and `model.merges`
/// moved back in: the canonical document, except that a legacy file's merges
/// keep their `"a b"` spelling.
pub(super) fn reattach(mut canonical: Value, mut full: Value) -> Value {
    let (Some(model), Some(full_model)) = (
        canonical.get_mut("model").and_then(Value::as_object_mut),
        full.get_mut("model").and_then(Value::as_object_mut),
    ) else {
        return canonical;
    };
    for key in ["vocab", "merges"] {
        if let Some(table) = full_model.remove(key) {
            model.insert(key.to_owned(), table);
        }
    }
    canonical
}

/// Builds the BPE pipeline of `full` (the document as read) whose canonical
/// skeleton is `canonical`; `None` when the file is not a BPE this module
/// recognises. `legacy` says `full` is not version 2.0 (its merges may be
/// `"a b"` strings, which the canonical form spells as pairs).
pub(super) fn bpe_pipeline(
    path: &Path,
    full: &Value,
    canonical: &Value,
    legacy: bool,
    cancel: &BuildCancel,
) -> Result<Option<PipelineTokenizer>> {
    bpe_parts(path, full, canonical, legacy)?
        .map(|parts| parts.build(full.get("model"), cancel))
        .transpose()
}

/// Everything [`bpe_pipeline`] reads and checks before the model build,
/// which [`Parts::build`] runs: that build is the one slow step, and a load
/// may leave it to a thread of its own (invariant `interim-equals-built`).
pub(super) struct Parts {
    path: PathBuf,
    /// The file is not version 2.0: its merges may be `"a b"` strings.
    legacy: bool,
    options: BpeConfig,
    added_vocabulary: BucketAddedVocabulary,
    normalizers: Vec<PipelineNormalizer>,
    pre_tokenizer: PipelinePreTokenizer,
    decoder: Option<DecoderRuntime>,
    /// The post-processor's JSON, read where a pipeline is put together.
    post_processor: String,
    frame: PipelineTokenizer,
    /// Past every id of the file: where a [`stand_in`] model's ids start.
    stand_in_from: u32,
}

/// The pipeline a load encodes with while the model builds: every
/// component of the file's, the model's work done by [`InterimBpe`].
pub(super) struct Interim {
    /// The file's normalizers, pre-tokenizer and added vocabulary (its
    /// model a stand-in holding the atoms, never called).
    pub(super) pipe: PipelineTokenizer,
    /// The model step; `None` for a byte-level BPE, whose model step is
    /// the crate's engine (`backend::bpe`).
    pub(super) model: Option<InterimModel>,
}

/// What [`bpe_pipeline`] builds its model from; `None` as there.
pub(super) fn bpe_parts(
    path: &Path,
    full: &Value,
    canonical: &Value,
    legacy: bool,
) -> Result<Option<Parts>> {
    let Some(model) = canonical.get("model").and_then(Value::as_object) else {
        return Ok(None);
    };
    if model.get("type").and_then(Value::as_str) != Some("BPE") {
        return Ok(None);
    }
    let Some(full_model) = full.get("model") else {
        return Ok(None);
    };
    let Some(options) = bpe_options(model) else {
        return Ok(None);
    };
    let Some(normalizers) = normalizers(canonical.get("normalizer").filter(|n| !n.is_null()))
    else {
        return Ok(None);
    };
    let Some(added) = added_tokens(canonical.get("added_tokens")) else {
        return Ok(None);
    };
    // `tokenizers`' reader on the skeleton: every component but the model.
    let Some(frame) = frame(path, canonical, &options) else {
        return Ok(None);
    };
    if format!("{normalizers:?}") != format!("{:?}", frame.get_normalizers())
        || !same_options(&frame, &options)
    {
        return Ok(None);
    }
    // The reader's pipeline must encode (a `Split` regex it has no engine for
    // is refused here), and only then is its pre-tokenizer cloned: `Split`'s
    // `Clone` recompiles the pattern and unwraps.
    // One the crate's own splits cover (invariant `crate-steps-equal-reference`) is read whole
    // instead.
    let splits = canonical
        .get("pre_tokenizer")
        .and_then(super::regex_split::RegexSplit::new);
    if super::probe(path, &frame, canonical, splits.as_ref())? {
        return Ok(None);
    }
    let pre_tokenizer = no_panic(path, "pre_tokenizer", || frame.get_pre_tokenizer().clone())?;
    let decoder = no_panic(path, "decoder", || frame.get_decoder().cloned())?;
    let Some(vocab) = full_model.get("vocab").and_then(Value::as_object) else {
        return Ok(None);
    };
    // The tables themselves are built with the model (`Parts::build`), off
    // the load's path where the load leaves it to a thread; `Vocab::read`
    // has checked them (invariant `assembled-equals-from-json`), and the merges' shape is checked
    // here.
    check_merge_list(path, full_model.get("merges"), legacy)?;
    let id_of = |t: &str| vocab.get(t).and_then(entry_id);

    let declared = match normalizers.last() {
        Some(PipelineNormalizer::Metaspace(_)) => &normalizers[..normalizers.len() - 1],
        _ => &normalizers[..],
    };
    let mut added_vocabulary = BucketAddedVocabulary::new();
    no_panic(path, "added tokens", || {
        added_vocabulary.add_tokens(added, vocab.len(), id_of, Some(&NormalizerChain(declared)))
    })?
    .map_err(|e| Error::parse(path, format!("added tokens: {e}")))?;
    // Numbered from the model's size, they are the file's ids where a
    // vocabulary is empty only if the file numbered them so.
    if vocab.is_empty() && !same_added_ids(full, &added_vocabulary) {
        return Err(Error::parse(
            path,
            "the added tokens of a BPE with an empty vocabulary must have the ids 0, 1, 2, ... (the reference renumbers them so)",
        ));
    }
    let post_processor = canonical
        .get("post_processor")
        .map_or_else(|| Ok("null".to_owned()), serde_json::to_string)
        .map_err(|e| Error::parse(path, e.to_string()))?;
    Ok(Some(Parts {
        path: path.to_path_buf(),
        legacy,
        options,
        added_vocabulary,
        normalizers,
        pre_tokenizer,
        decoder,
        post_processor,
        frame,
        stand_in_from: first_free_id(full),
    }))
}

impl Parts {
    /// The file these parts were read from.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The model build from `model` (the file's model object, with its
    /// vocabulary and merges), and the pipeline put together around it; a
    /// background build stops between stages once `cancel` is set.
    pub(super) fn build(
        self,
        model: Option<&Value>,
        cancel: &BuildCancel,
    ) -> Result<PipelineTokenizer> {
        let path = self.path.as_path();
        super::pipe::stage(cancel)?;
        let vocab = model
            .and_then(|m| m.get("vocab"))
            .and_then(Value::as_object)
            .ok_or_else(|| Error::parse(path, "the BPE model has no vocabulary object"))?;
        let mut table = BpeVocab::default();
        table.reserve(vocab.len());
        for (token, id) in vocab {
            let id = entry_id(id)
                .ok_or_else(|| Error::parse(path, format!("vocab entry {token:?} has a bad id")))?;
            table.insert(token.clone(), id);
        }
        super::pipe::stage(cancel)?;
        let merges = merge_list(path, model.and_then(|m| m.get("merges")), self.legacy)?;
        super::pipe::stage(cancel)?;
        let mut options = self.options;
        if table.is_empty() {
            table = stand_in(path, &mut options, self.stand_in_from)?;
        }
        check_bpe_tables(
            path,
            &table,
            &merges,
            options.continuing_subword_prefix.as_deref(),
        )?;
        super::pipe::stage(cancel)?;
        let bpe = no_panic(path, "building the BPE model", || {
            PipelineBPE::from_config(BpeConfig {
                vocab: table,
                merges,
                cache_capacity: crate::backend::BPE_WORD_CACHE_SLOTS,
                ..options
            })
        })?
        .map_err(|e| Error::parse(path, format!("tokenizer.json: {e}")))?;
        super::pipe::stage(cancel)?;
        let post_processor = read_post_processor(path, &self.post_processor)?;
        Ok(PipelineTokenizer::from_parts(
            self.added_vocabulary,
            self.normalizers,
            self.pre_tokenizer,
            PipelineModel::BPE(bpe),
            post_processor,
            self.decoder,
            self.frame.get_role_to_token().clone(),
            self.frame.get_padding().cloned(),
            self.frame.get_truncation().cloned(),
        ))
    }

    /// Whether the model is a plain BPE (no dropout, no affixes) on
    /// byte-level characters or with byte fallback, the kinds
    /// [`InterimBpe`] encodes.
    pub(super) fn interim_fits(&self) -> bool {
        let o = &self.options;
        let plain = |a: &Option<String>| a.as_deref().is_none_or(str::is_empty);
        (o.byte_level || o.byte_fallback)
            && o.dropout.is_none()
            && plain(&o.continuing_subword_prefix)
            && plain(&o.end_of_word_suffix)
    }

    /// The pipeline to encode with until [`build`](Self::build) is done,
    /// around `bpe` (built from the same file's tables by `Vocab::read`),
    /// or for a byte-level BPE around no model (`None`: the crate's engine
    /// is its model step); `None` unless [`interim_fits`](Self::interim_fits).
    /// `canonical` is the skeleton these parts were read from.
    pub(super) fn interim(
        &self,
        canonical: &Value,
        bpe: Option<Box<InterimBpe>>,
    ) -> Result<Option<Interim>> {
        if !self.interim_fits() || bpe.is_some() == self.options.byte_level {
            return Ok(None);
        }
        let path = self.path.as_path();
        let model = canonical.get("model").and_then(Value::as_object);
        let (Some(options), Some(normalizers)) = (
            model.and_then(bpe_options),
            normalizers(canonical.get("normalizer").filter(|n| !n.is_null())),
        ) else {
            return Ok(None);
        };
        let vocab: BpeVocab = atoms(&options).into_iter().zip(0u32..).collect();
        let stand_in = no_panic(path, "building the atoms' BPE model", || {
            PipelineBPE::from_config(BpeConfig {
                vocab,
                merges: Merges::new(),
                ..options
            })
        })?
        .map_err(|e| Error::parse(path, format!("tokenizer.json: {e}")))?;
        let pre_tokenizer = no_panic(path, "pre_tokenizer", || self.pre_tokenizer.clone())?;
        let pipe = PipelineTokenizer::from_parts(
            self.added_vocabulary.clone(),
            normalizers,
            pre_tokenizer,
            PipelineModel::BPE(stand_in),
            read_post_processor(path, &self.post_processor)?,
            self.decoder.clone(),
            self.frame.get_role_to_token().clone(),
            self.frame.get_padding().cloned(),
            self.frame.get_truncation().cloned(),
        );
        Ok(Some(Interim {
            pipe,
            model: bpe.map(InterimModel::Bpe),
        }))
    }
}

fn read_post_processor(path: &Path, json: &str) -> Result<PipelinePostProcessor> {
    no_panic(path, "post_processor", || {
        tokenizers::post_processor_from_json(json)
    })?
    .map_err(|e| Error::parse(path, format!("post_processor: {e}")))
}

/// A JSON field as `tokenizers`' reader sees it: `null` is absent.
fn field<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

/// The model options as `tokenizers`' `read_bpe` reads them.
fn bpe_options(model: &Map<String, Value>) -> Option<BpeConfig> {
    let text = |k| field(model, k).and_then(Value::as_str).map(str::to_owned);
    let flag = |k| field(model, k).and_then(Value::as_bool).unwrap_or_default();
    Some(BpeConfig {
        byte_level: field(model, "byte_level")?.as_bool()?,
        dropout: field(model, "dropout")
            .and_then(Value::as_f64)
            .map(|v| v as f32),
        unk_token: text("unk_token"),
        continuing_subword_prefix: text("continuing_subword_prefix"),
        end_of_word_suffix: text("end_of_word_suffix"),
        fuse_unk: flag("fuse_unk"),
        byte_fallback: flag("byte_fallback"),
        ignore_merges: flag("ignore_merges"),
        ..BpeConfig::default()
    })
}

/// The reader's pipeline on the skeleton (every component but the model,
/// which holds only atoms): what the load reads a deferred pipeline's
/// post-processor, roles, padding and normalizers from (invariant `background-build-invisible`).
/// `None`
/// if the model is not a BPE this module reads.
pub(super) fn frame_of(path: &Path, canonical: &Value) -> Option<PipelineTokenizer> {
    let model = canonical.get("model").and_then(Value::as_object)?;
    if model.get("type").and_then(Value::as_str) != Some("BPE") {
        return None;
    }
    let options = bpe_options(model)?;
    let frame = frame(path, canonical, &options)?;
    same_options(&frame, &options).then_some(frame)
}

/// Whether the skeleton's model, as the reader built it, has the options
/// read here (the atoms that matter for its kind).
fn same_options(frame: &PipelineTokenizer, options: &BpeConfig) -> bool {
    let PipelineModel::BPE(bpe) = frame.get_model() else {
        return false;
    };
    let Ok(read) = bpe.to_config() else {
        return false;
    };
    // `to_config` spells an empty affix as `None`; the build reads both alike.
    let affix = |a: &Option<String>| a.clone().filter(|a| !a.is_empty());
    read.byte_level == options.byte_level
        && affix(&read.continuing_subword_prefix) == affix(&options.continuing_subword_prefix)
        && affix(&read.end_of_word_suffix) == affix(&options.end_of_word_suffix)
        && (options.byte_level
            || (read.unk_token == options.unk_token
                && read.fuse_unk == options.fuse_unk
                && read.byte_fallback == options.byte_fallback))
}

/// `tokenizers`' reader on the skeleton, with a vocabulary of the atoms its
/// build requires (bytes, byte-fallback pieces, the unknown token) and no
/// merges; `None` if it fails (the caller's full read then reports why).
/// The entries a BPE model of `options` cannot be built without: the
/// byte-level characters, the byte-fallback pieces, the unknown token, and
/// one inert entry (`tokenizers` panics building an empty store).
fn atoms(options: &BpeConfig) -> Vec<String> {
    let mut atoms: Vec<String> = Vec::new();
    if options.byte_level {
        let table = byte_level::byte_to_char_table();
        atoms.extend((0..=255u8).map(|b| byte_level::spell(&[b], &table)));
    }
    if options.byte_fallback {
        atoms.extend((0..=255u8).map(|b| format!("<0x{b:02X}>")));
    }
    atoms.extend(options.unk_token.clone());
    atoms.push(INERT.to_owned());
    atoms
}

/// The model built for a BPE whose `model.vocab` is empty (a file of added
/// tokens only), which `tokenizers` 1.0 cannot build (it panics on an empty
/// store, and refuses an `unk_token` outside the vocabulary or a byte-level
/// model without its bytes): the [`atoms`], the unknown token (if the file
/// names one) an inert entry, at ids from `from` on, past the file's. Every
/// word handed to it then gives stand-in ids, which `Vocab::model_ids` turns
/// into the reference's answer: nothing, or its unknown-token error.
fn stand_in(path: &Path, options: &mut BpeConfig, from: u32) -> Result<BpeVocab> {
    if options.unk_token.is_some() {
        options.unk_token = Some(INERT.to_owned());
    }
    options.ignore_merges = false;
    let mut vocab = BpeVocab::default();
    let mut next = from;
    for atom in atoms(options) {
        if vocab.contains_key(&atom) {
            continue;
        }
        vocab.insert(atom, next);
        next = next
            .checked_add(1)
            .ok_or_else(|| Error::parse(path, "no ids left past the added tokens' ids"))?;
    }
    Ok(vocab)
}

/// The entry that stands for no text: `tokenizers` needs one in a store.
const INERT: &str = "\u{10FFFF}";

/// One past the largest id of `doc`'s `model.vocab` map and `added_tokens`.
fn first_free_id(doc: &Value) -> u32 {
    let model = doc
        .get("model")
        .and_then(|m| m.get("vocab"))
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|v| v.values());
    let added = doc
        .get("added_tokens")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("id"));
    model
        .chain(added)
        .filter_map(entry_id)
        .map(|id| id.saturating_add(1))
        .max()
        .unwrap_or(0)
}

/// `(content, id)` of `doc`'s added tokens.
fn added_ids(doc: &Value) -> Vec<(&str, u32)> {
    let list = doc.get("added_tokens").and_then(Value::as_array);
    list.into_iter()
        .flatten()
        .filter_map(|t| Some((t.get("content")?.as_str()?, entry_id(t.get("id")?)?)))
        .collect()
}

/// `doc` (canonical) with a [`stand_in`] model where its BPE's `model.vocab`
/// is empty, for `tokenizers`' whole read; `false` (unchanged) otherwise.
///
/// The reader numbers added tokens past the model's entries unless they are
/// entries, so the stand-in also holds each added token under its file id.
/// A model with no merges (nor `ignore_merges`) never gives an entry of two
/// chars or more, so only such tokens may be held: any other is refused.
pub(super) fn stand_in_document(path: &Path, doc: &mut Value) -> Result<bool> {
    let from = first_free_id(doc);
    let added: Vec<(String, u32)> = added_ids(doc)
        .into_iter()
        .map(|(t, id)| (t.to_owned(), id))
        .collect();
    let Some(model) = doc.get_mut("model").and_then(Value::as_object_mut) else {
        return Ok(false);
    };
    let empty = model.get("type").and_then(Value::as_str) == Some("BPE")
        && model
            .get("vocab")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty);
    let Some(mut options) = bpe_options(model).filter(|_| empty) else {
        return Ok(false);
    };
    let atoms = stand_in(path, &mut options, from)?;
    let mut vocab: Map<String, Value> = Map::with_capacity(atoms.len() + added.len());
    for (content, id) in added {
        if content.chars().nth(1).is_none() || atoms.contains_key(&content) {
            return Err(Error::parse(
                path,
                format!(
                    "the added token {content:?} of a BPE with an empty vocabulary cannot be read by tokenizers 1.0 with this file's components"
                ),
            ));
        }
        vocab.insert(content, id.into());
    }
    vocab.extend(atoms.into_iter().map(|(t, id)| (t, id.into())));
    model.insert("vocab".into(), Value::Object(vocab));
    model.insert("ignore_merges".into(), false.into());
    if options.unk_token.is_some() {
        model.insert("unk_token".into(), INERT.into());
    }
    Ok(true)
}

/// Whether `added` holds `doc`'s added tokens, each under the id the file
/// gives it.
pub(super) fn same_added_ids(doc: &Value, added: &BucketAddedVocabulary) -> bool {
    let replayed = added.get_vocab();
    let listed = added_ids(doc);
    replayed.len() == listed.len()
        && listed
            .iter()
            .all(|&(content, id)| replayed.get(content) == Some(&id))
}

fn frame(path: &Path, canonical: &Value, options: &BpeConfig) -> Option<PipelineTokenizer> {
    let atoms = atoms(options);
    let mut vocab = Map::with_capacity(atoms.len());
    for (id, atom) in atoms.into_iter().enumerate() {
        vocab.insert(atom, Value::from(id));
    }
    let mut doc = canonical.clone();
    let model = doc.get_mut("model")?.as_object_mut()?;
    model.insert("vocab".into(), Value::Object(vocab));
    model.insert("merges".into(), Value::Array(Vec::new()));
    let text = serde_json::to_string(&doc).ok()?;
    no_panic(path, "tokenizer.json", || tokenizers::from_json(&text))
        .ok()?
        .ok()
}

/// The reader's pipeline on a WordPiece file's skeleton, for its interim
/// engine (invariant `interim-equals-built`): every component the chunk encoder reads. Its
/// vocabulary holds only `entries` (the unknown token and the added tokens
/// with the ids the file gives them), so the added vocabulary the reader
/// replays gets those ids; `None` unless it does (`added`: content → id as
/// the file declares them), or the reader refuses the document.
pub(super) fn wordpiece_frame(
    path: &Path,
    canonical: &Value,
    entries: &[(&str, u32)],
    added: &[(&str, u32)],
) -> Option<PipelineTokenizer> {
    let model = canonical.get("model").and_then(Value::as_object)?;
    if model.get("type").and_then(Value::as_str) != Some("WordPiece") {
        return None;
    }
    let mut vocab = Map::with_capacity(entries.len());
    for &(token, id) in entries {
        vocab.insert(token.to_owned(), Value::from(id));
    }
    let mut doc = canonical.clone();
    doc.get_mut("model")?
        .as_object_mut()?
        .insert("vocab".into(), Value::Object(vocab));
    let text = serde_json::to_string(&doc).ok()?;
    let frame = no_panic(path, "tokenizer.json", || tokenizers::from_json(&text))
        .ok()?
        .ok()?;
    let replayed = frame.get_added_vocabulary().get_vocab();
    let same = replayed.len() == added.len()
        && added
            .iter()
            .all(|&(content, id)| replayed.get(content) == Some(&id));
    same.then_some(frame)
}

fn merges_error(path: &Path, rank: usize, what: &str) -> Error {
    Error::parse(path, format!("merge {rank}: {what}"))
}

/// Each merge of the list as a pair, in rank order, to `f`. A legacy
/// file's `"a b"` strings are split as `tokenizers`' upgrade does: exactly
/// two parts. (A `#version` line, which the upgrade drops, never gets here:
/// `Vocab::read` refuses it first.)
fn for_each_merge<'a>(
    path: &Path,
    merges: Option<&'a Value>,
    legacy: bool,
    mut f: impl FnMut(&'a str, &'a str),
) -> Result<usize> {
    let Some(list) = merges.and_then(Value::as_array) else {
        return Err(Error::parse(path, "the BPE model has no `merges` array"));
    };
    for (rank, entry) in list.iter().enumerate() {
        match entry {
            Value::Array(pair) => match pair.as_slice() {
                [Value::String(a), Value::String(b)] => f(a, b),
                _ => return Err(merges_error(path, rank, "not a pair of strings")),
            },
            Value::String(s) if legacy => {
                let mut parts = s.split(' ');
                match (parts.next(), parts.next(), parts.next()) {
                    (Some(a), Some(b), None) => f(a, b),
                    _ => return Err(merges_error(path, rank, "not two tokens split by a space")),
                }
            }
            _ => return Err(merges_error(path, rank, "not a [left, right] pair")),
        }
    }
    Ok(list.len())
}

/// What [`merge_list`] refuses, without copying the merges.
fn check_merge_list(path: &Path, merges: Option<&Value>, legacy: bool) -> Result<()> {
    for_each_merge(path, merges, legacy, |_, _| {}).map(drop)
}

/// The merge list as pairs ([`for_each_merge`]).
fn merge_list(path: &Path, merges: Option<&Value>, legacy: bool) -> Result<Merges> {
    let len = merges.and_then(Value::as_array).map_or(0, Vec::len);
    let mut out = Merges::with_capacity(len);
    for_each_merge(path, merges, legacy, |a, b| {
        out.push((a.to_owned(), b.to_owned()));
    })?;
    Ok(out)
}

/// `added_tokens` in ascending id order (stable), as `tokenizers` replays them.
fn added_tokens(list: Option<&Value>) -> Option<Vec<AddedToken>> {
    let Some(list) = list.filter(|l| !l.is_null()) else {
        return Some(Vec::new());
    };
    let list = list.as_array()?;
    let mut order: Vec<(u32, usize)> = Vec::with_capacity(list.len());
    for (i, entry) in list.iter().enumerate() {
        let id = entry.get("id")?.as_u64()?;
        order.push((u32::try_from(id).ok()?, i));
    }
    order.sort_unstable();
    order
        .into_iter()
        .map(|(_, i)| {
            let entry = list.get(i)?.as_object()?;
            let flag = |k| field(entry, k).and_then(Value::as_bool);
            Some(AddedToken {
                content: entry.get("content")?.as_str()?.to_owned(),
                single_word: flag("single_word")?,
                lstrip: flag("lstrip")?,
                rstrip: flag("rstrip")?,
                normalized: flag("normalized")?,
                special: flag("special")?,
            })
        })
        .collect()
}

/// The normalizer chain, flattened, for the kinds built here; `None` for
/// any other kind (the caller then reads the whole file with `from_json`).
fn normalizers(cfg: Option<&Value>) -> Option<Vec<PipelineNormalizer>> {
    let mut out = Vec::new();
    if let Some(cfg) = cfg {
        push_normalizer(cfg, &mut out)?;
    }
    Some(out)
}

fn push_normalizer(cfg: &Value, out: &mut Vec<PipelineNormalizer>) -> Option<()> {
    let obj = cfg.as_object()?;
    let text = |k| field(obj, k).and_then(Value::as_str);
    let flag = |k| field(obj, k).and_then(Value::as_bool);
    match obj.get("type")?.as_str()? {
        "Sequence" => {
            let empty = Vec::new();
            let members = field(obj, "normalizers")
                .and_then(Value::as_array)
                .unwrap_or(&empty);
            for member in members {
                push_normalizer(member, out)?;
            }
        }
        "NFC" => out.push(PipelineNormalizer::NFC(NFC)),
        "NFD" => out.push(PipelineNormalizer::NFD(NFD)),
        "NFKC" => out.push(PipelineNormalizer::NFKC(NFKC)),
        "NFKD" => out.push(PipelineNormalizer::NFKD(NFKD)),
        "Lowercase" => out.push(PipelineNormalizer::Lowercase(Lowercase)),
        "Strip" => out.push(PipelineNormalizer::Strip(Strip::new(
            flag("strip_left")?,
            flag("strip_right")?,
        ))),
        "Prepend" => out.push(PipelineNormalizer::Prepend(Prepend::new(
            text("prepend")?.to_owned(),
        ))),
        "Replace" => {
            let pattern = field(obj, "pattern")?.as_object()?;
            let pattern = match (
                field(pattern, "String").and_then(Value::as_str),
                field(pattern, "Regex").and_then(Value::as_str),
            ) {
                (Some(s), _) => ReplacePattern::String(s.to_owned()),
                (None, Some(r)) => ReplacePattern::Regex(r.to_owned()),
                (None, None) => return None,
            };
            out.push(PipelineNormalizer::Replace(
                Replace::new(pattern, text("content")?).ok()?,
            ));
        }
        _ => return None,
    }
    Some(())
}
