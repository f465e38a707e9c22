//! Hugging Face `tokenizer.json` backend, on `tokenizers` 1.0's read-only pipeline.
//!
//! Performance notes:
//! - `encode` runs the pipeline's stages with padding and truncation off and
//!   adds the template tokens itself, neither copying the input nor building
//!   an `Encoding`. A BPE runs them through the chunk encoder's walk
//!   ([`chunk`]), so sequential encodes and parallel chunks fill one word
//!   cache per thread (invariant `pipeline-walk-equals-pipeline`); other models call
//!   `PipelineTokenizer::encode_into`.
//! - Offsets are a separate, slower path ([`offsets`]); only callers that ask
//!   for them (the CLI's `--json`, the parallel encoder's merge) pay for it.

mod added;
mod align;
mod assemble;
mod bert_norm;
mod chunk;
mod interim;
use interim::InterimModel;
mod nfc;
mod pipe;
mod regex_split;
mod replace;

mod spm_route;
mod vocab;

use std::path::Path;
use tokenizers::pipeline::{EncodeOptions, Override, PipelineToken, PipelineTokenizer};

use crate::backend::join_cuts::JoinCuts;
use crate::backend::{BuildCancel, DecodeStyle, Decoder, Encoder, Tokenizer};
use crate::config::TokenizerConfig;
use crate::contract::family::classify_hf;
use crate::contract::{ChunkEncoding, ChunkRequest, EdgeRule, SplitFamily, SplitSpec};
use crate::encoding::{Encoding, EncodingBuilder};
use crate::error::{Error, Result};
use crate::special::SpecialTokenPolicy;
use crate::special::{SpecialToken, SpecialTokens};
use chunk::AsText;
pub(crate) use vocab::ModelKind;
use vocab::Vocab;

const NAME: &str = "hf";

/// Tokenizer classes whose transformers implementation rebuilds the
/// post-processor from `add_bos_token` / `add_eos_token`.
const REBUILDS_TEMPLATE: &[&str] = &[
    "LlamaTokenizer",
    "CodeLlamaTokenizer",
    "GemmaTokenizer",
    "CohereTokenizer",
];

pub(crate) struct HfBackend {
    /// `tokenizers`' pipeline; see [`Self::pipe`].
    pipe: pipe::Pipe,
    vocab: Vocab,
    options: EncodeOptions,
    /// Ids `add_special_tokens` puts before and after the sequence.
    prefix: Vec<u32>,
    suffix: Vec<u32>,
    special_tokens: SpecialTokens,
    specials_as_text: bool,
    /// Keep the file's padding/truncation (encode through the full pipeline).
    file_padding: bool,
    /// The file's `ByteLevel` pre-tokenizer has `add_prefix_space` (invariant
    /// `crate-steps-equal-reference`).
    prefix_space: bool,
    /// How the parallel encoder may cut this tokenizer's encodes.
    split: SplitSpec,
    /// The chunk encoder's warm scratch per thread.
    scratch: chunk::ScratchSlots,
    /// How the normalizer chain acts piece by piece (for chunk windows).
    pieces: chunk::PieceNorm,
    /// The chain is one `BertNormalizer`: normalized here, the common
    /// characters without `tokenizers`' per-character lookups (invariant
    /// `crate-steps-equal-reference`).
    bert: Option<bert_norm::BertFast>,
    /// The only normalizer is NFC: encodes take the chunk walk, which
    /// normalizes with [`nfc::normalize`] (invariant `crate-steps-equal-reference`).
    nfc_only: bool,
    /// The chain has a step whose output depends on the Unicode version
    /// (a normal form, `BertNormalizer`): non-ASCII text takes the chunk
    /// walk, which runs them as the reference does (invariant `unicode-classes-are-reference`).
    unicode_steps: bool,
    /// Added tokens matched on an Aho-Corasick automaton instead of
    /// `tokenizers`' bucket matcher (invariant `crate-steps-equal-reference`); `None`:
    /// `tokenizers`'.
    added: Option<added::AddedMatcher>,
    /// The pre-tokenizer's regex splits on `fancy-regex`, for segments with
    /// Unicode 17 code points (invariant `unicode-classes-are-reference`); `None`: a shape it does
    /// not cover.
    regex_split: Option<regex_split::RegexSplit>,
    /// The pre-tokenizer can only split on a char the normalizer replaced
    /// everywhere: each piece is one pre-token (invariant `crate-steps-equal-reference`).
    whole_pieces: bool,
    /// Where such a piece may be cut for a character BPE (invariant `cut-where-no-entry-joins`).
    joins: Option<JoinCuts>,
    /// The lone one-char `Replace` normalizer, run by the crate on the
    /// chunk walk (invariant `crate-steps-equal-reference`).
    lone_replace: Option<replace::LoneReplace>,
    /// A SentencePiece conversion on the native engine (invariant `spm-route-same-merges`),
    /// or why the file stays on `tokenizers`.
    spm: std::result::Result<spm_route::SpmRoute, spm_route::Refusal>,
    /// The crate's byte-level BPE engine: the model step of every encode
    /// of a byte-level BPE without dropout or affixes ([`crate::backend::bpe`]).
    byte_bpe: Option<std::sync::Arc<crate::backend::bpe::ByteBpe>>,
}

/// Why a file keeping its padding or truncation stays off the
/// SentencePiece route (its encodes go through the whole pipeline).
const PADDING_KEPT: &str = "padding or truncation kept from the file";

/// What the first half of a load built of the pipeline.
enum Early {
    /// The whole pipeline, assembled (invariant `assembled-equals-from-json`).
    Built(PipelineTokenizer),
    /// The reader's skeleton pipeline; the whole one is deferred (invariant
    /// `background-build-invisible`).
    Frame(PipelineTokenizer),
    /// All but the model build, for an interim engine to encode while it
    /// runs (invariant `interim-equals-built`), if `Vocab::read` built one.
    Parts(Box<assemble::Parts>),
    /// A pipeline to encode with until the whole one, read on a thread of
    /// its own, is done (invariant `interim-equals-built`).
    Deferred(Box<assemble::Interim>),
    /// All but the model build, and the pipeline that encodes until it is
    /// done (invariant `interim-equals-built`).
    Staged(Box<assemble::Parts>, Box<assemble::Interim>),
    /// Nothing: the file is read whole once `Vocab::read` validated it.
    None,
}

/// Which of the fast routes a load may take; all on except in the
/// route-equivalence tests.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Routes {
    /// SentencePiece-BPE files on the native engine (invariant `spm-route-same-merges`).
    pub spm: bool,
    /// BPE pipelines built by [`assemble`] (invariant `assembled-equals-from-json`).
    pub assemble: bool,
    /// A lone NFC normalizer run by the crate, its quick check from a
    /// table ([`nfc::normalize`], invariant `crate-steps-equal-reference`).
    pub nfc: bool,
    /// Added tokens on an Aho-Corasick automaton (invariant `crate-steps-equal-reference`).
    pub added: bool,
    /// No pre-tokenizer call where the normalizer leaves nothing it could
    /// split on (invariant `crate-steps-equal-reference`).
    pub whole_pieces: bool,
    /// A lone one-char `Replace` normalizer run by the crate (invariant
    /// `crate-steps-equal-reference`).
    pub lone_replace: bool,
    /// A BPE's model build (invariant `interim-equals-built`), or a WordPiece file's whole read
    /// (invariant `interim-equals-built`), left to a thread of its own while an interim engine
    /// ([`interim::InterimModel`]) encodes.
    pub interim: bool,
    /// With `interim`: no thread; the model is built when something waits
    /// for it (the equivalence tests, which must see the interim engine).
    pub hold_model: bool,
    /// CJK pre-tokens cut where no merge joins across (invariant `cut-where-no-entry-joins`).
    pub cuts: bool,
    /// A character BPE's whole pieces cut where no entry joins (invariant
    /// `cut-where-no-entry-joins`).
    pub joins: bool,
    /// A byte-level BPE's words on the crate's engine ([`crate::backend::bpe`]).
    pub byte_bpe: bool,
}

impl Default for Routes {
    fn default() -> Self {
        Self {
            spm: true,
            assemble: true,
            nfc: true,
            added: true,
            whole_pieces: true,
            lone_replace: true,
            interim: true,
            hold_model: false,
            cuts: true,
            joins: true,
            byte_bpe: true,
        }
    }
}

/// Whether the file's pre-tokenizer splits only on a literal char that its
/// normalizer replaced everywhere (Gemma: `Replace(" " → "▁")` then
/// `Split(" ")`), so that on normalized text it never finds a match and
/// each piece is one pre-token: a `Split` on a `String` of one char, not
/// inverted, after a normalizer whose last step is a `Replace` of that
/// `String` by a content without that char. A later step of the chain
/// could bring the char back, so only the last one counts.
fn split_finds_nothing(value: &serde_json::Value) -> bool {
    let string = |v: &serde_json::Value| -> Option<String> {
        v.get("pattern")?.get("String")?.as_str().map(str::to_owned)
    };
    let Some(pre) = value.get("pre_tokenizer") else {
        return false;
    };
    let is_split = pre.get("type").and_then(|t| t.as_str()) == Some("Split")
        && pre.get("invert").and_then(|i| i.as_bool()) != Some(true);
    let Some(split_on) = string(pre).filter(|p| is_split && p.chars().count() == 1) else {
        return false;
    };
    let Some(normalizer) = value.get("normalizer") else {
        return false;
    };
    let last = match normalizer.get("type").and_then(|t| t.as_str()) {
        Some("Sequence") => normalizer
            .get("normalizers")
            .and_then(|n| n.as_array())
            .and_then(|n| n.last()),
        _ => Some(normalizer),
    };
    last.is_some_and(|n| {
        n.get("type").and_then(|t| t.as_str()) == Some("Replace")
            && string(n).as_deref() == Some(split_on.as_str())
            && n.get("content")
                .and_then(|c| c.as_str())
                .is_some_and(|c| !c.contains(split_on.as_str()))
    })
}

/// A parsed `tokenizer.json` ready for the load.
pub(super) struct Prepared {
    value: serde_json::Value,
    /// The document without the model's tables, canonical.
    skeleton: serde_json::Value,
    /// Whether the file is older than the canonical (2.0) form.
    legacy: bool,
    /// Whether its `ByteLevel` pre-tokenizer had `add_prefix_space` (taken out).
    prefix_space: bool,
}

/// Takes `add_prefix_space: true` out of a `ByteLevel` pre-tokenizer that
/// sees each piece of text whole (alone, or alone in a `Sequence`), which
/// `tokenizers` 1.0's upgrade refuses: whether it was there. The chunk walk
/// puts the space in front of each piece instead (invariant `crate-steps-equal-reference`). After
/// other
/// pre-tokenizers the space goes in front of each of their pre-tokens; that
/// shape keeps the upgrade's refusal.
fn take_prefix_space(value: &mut serde_json::Value) -> bool {
    let Some(pre) = value.get_mut("pre_tokenizer") else {
        return false;
    };
    let is_byte_level = |m: &serde_json::Value| {
        m.get("type").and_then(serde_json::Value::as_str) == Some("ByteLevel")
    };
    let byte_level = match pre.get("type").and_then(serde_json::Value::as_str) {
        Some("ByteLevel") => Some(pre),
        Some("Sequence") => match pre
            .get_mut("pretokenizers")
            .and_then(serde_json::Value::as_array_mut)
            .map(Vec::as_mut_slice)
        {
            Some([only]) if is_byte_level(only) => Some(only),
            _ => None,
        },
        _ => None,
    };
    match byte_level.and_then(serde_json::Value::as_object_mut) {
        Some(b) if b.get("add_prefix_space") == Some(&serde_json::Value::Bool(true)) => {
            b.insert("add_prefix_space".into(), serde_json::Value::Bool(false));
            true
        }
        _ => false,
    }
}

/// Runs a `tokenizers` call that may panic on a file validation missed.
fn no_panic<T>(path: &Path, what: &str, f: impl FnOnce() -> T) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|_| {
        Error::parse(
            path,
            format!("{what}: tokenizers 1.0 failed on this file (internal panic)"),
        )
    })
}

/// A tokenizer that loads must encode. `tokenizers` 1.0 accepts a `Split`
/// pre-tokenizer regex it has no engine for and fails on every encode: such
/// a file splits every text on the crate's steps (`splits`, invariant
/// `crate-steps-equal-reference`;
/// `Ok(true)`), or where they do not cover its pre-tokenizer is refused
/// here, with the pattern.
fn probe(
    path: &Path,
    pipe: &PipelineTokenizer,
    value: &serde_json::Value,
    splits: Option<&regex_split::RegexSplit>,
) -> Result<bool> {
    let options = EncodeOptions {
        add_special_tokens: false,
        encode_special_tokens: false,
        padding: Override::Off,
        truncation: Override::Off,
    };
    let mut out: Vec<PipelineToken> = Vec::new();
    let result = no_panic(path, "encoding a probe text", || {
        pipe.encode_into("a 1", &options, &mut out)
    })?;
    match result {
        Err(e) if e.to_string().contains("system-regex") && splits.is_some() => Ok(true),
        Err(e) if e.to_string().contains("system-regex") => {
            let pattern = split_regex(value.get("pre_tokenizer"))
                .map(|p| format!(" {p:?}"))
                .unwrap_or_default();
            Err(Error::new(crate::error::ErrorKind::UnsupportedFormat {
                path: path.to_path_buf(),
                detected: crate::limits::short_quotes(&format!(
                    "a `Split` pre-tokenizer regex{pattern} that neither tokenizers 1.0 (natively: the GPT-2, cl100k, o200k, Llama-3, Qwen, DeepSeek families) nor the crate's `fancy-regex` splits can run; it could load but never encode"
                )),
            }))
        }
        _ => Ok(false),
    }
}

/// The first `Split` regex in a pre-tokenizer (or a `Sequence` of them).
fn split_regex(pre: Option<&serde_json::Value>) -> Option<String> {
    let pre = pre?;
    if let Some(list) = pre
        .get("pretokenizers")
        .and_then(serde_json::Value::as_array)
    {
        return list.iter().find_map(|p| split_regex(Some(p)));
    }
    pre.get("pattern")?
        .get("Regex")?
        .as_str()
        .map(str::to_owned)
}

impl HfBackend {
    pub(crate) fn from_json(
        path: &Path,
        json: &str,
        config: &TokenizerConfig,
        policy: SpecialTokenPolicy,
        keep_padding_truncation: bool,
    ) -> Result<Self> {
        Self::from_json_routed(
            path,
            json,
            config,
            policy,
            keep_padding_truncation,
            Routes::default(),
        )
    }

    /// [`from_json`](Self::from_json) with routes switched off (the
    /// route-equivalence tests compare both sides).
    pub(crate) fn from_json_routed(
        path: &Path,
        json: &str,
        config: &TokenizerConfig,
        policy: SpecialTokenPolicy,
        keep_padding_truncation: bool,
        routes: Routes,
    ) -> Result<Self> {
        let Prepared {
            value,
            skeleton,
            legacy,
            prefix_space,
        } = Self::prepare(path, json)?;
        let padding_kept = keep_padding_truncation
            && ["padding", "truncation"]
                .iter()
                .any(|k| value.get(*k).is_some_and(|v| !v.is_null()));
        // The pipeline build and this crate's tables are independent reads of
        // the same document: they run side by side (invariant `assembled-equals-from-json`).
        // `Vocab::read`
        // validates what `tokenizers` would panic on, and `assemble` checks
        // the same before its model build; the vocabulary's error comes first.
        // A file the SentencePiece route will encode gets only the reader's
        // skeleton pipeline here; the whole one is built on a thread of its
        // own (invariant `background-build-invisible`).
        let (early, vocab) = rayon::join(
            || -> Result<(std::result::Result<spm_route::SpmRoute, spm_route::Refusal>, Early)> {
                let spm = if !routes.spm {
                    Err("the route is switched off".to_owned())
                } else if padding_kept {
                    Err(PADDING_KEPT.to_owned())
                } else {
                    let tables = value.get("model").unwrap_or(&serde_json::Value::Null);
                    spm_route::SpmRoute::recognise(&skeleton, tables)
                };
                if spm.is_ok()
                    && routes.assemble
                    && let Some(frame) = assemble::frame_of(path, &skeleton)
                {
                    return Ok((spm, Early::Frame(frame)));
                }
                let parts = if routes.assemble {
                    assemble::bpe_parts(path, &value, &skeleton, legacy)?
                } else {
                    None
                };
                let Some(parts) = parts else {
                    return Ok((spm, Early::None));
                };
                // A byte-level BPE may encode on the interim engine while its
                // model builds on a thread of its own (invariant `interim-equals-built`): the
                // engine comes from `Vocab::read`, so that is decided after
                // the join.
                if routes.interim && spm.is_err() && parts.interim_fits() {
                    return Ok((spm, Early::Parts(Box::new(parts))));
                }
                Ok((spm, Early::Built(parts.build(value.get("model"), &BuildCancel::never())?)))
            },
            || Vocab::read(path, &value),
        );
        let mut vocab = vocab?;
        let (spm, early) = early?;
        // A byte-level file the crate's engine encodes may never need the
        // model (see `Pipe::forgo`): its build waits until that is known.
        let engine_may_take = routes.byte_bpe && vocab.byte_bpe.is_some() && !padding_kept;
        let early = match (early, vocab.interim.take()) {
            (Early::Parts(parts), Some(InterimModel::Bpe(bpe))) => {
                match parts.interim(&skeleton, Some(bpe))? {
                    Some(interim) => Early::Staged(parts, Box::new(interim)),
                    None => Early::Built(parts.build(value.get("model"), &BuildCancel::never())?),
                }
            }
            // A byte-level BPE: the interim pipeline holds no model.
            (Early::Parts(parts), None) if engine_may_take => {
                match parts.interim(&skeleton, None)? {
                    Some(interim) => Early::Staged(parts, Box::new(interim)),
                    None => Early::Built(parts.build(value.get("model"), &BuildCancel::never())?),
                }
            }
            (Early::Parts(parts), _) => {
                Early::Built(parts.build(value.get("model"), &BuildCancel::never())?)
            }
            // A WordPiece file is read whole on a thread of its own while
            // its interim engine encodes (invariant `interim-equals-built`).
            (Early::None, Some(InterimModel::WordPiece(model))) if routes.interim => {
                match Self::wordpiece_frame(path, &skeleton, &vocab) {
                    Some(pipe) => Early::Deferred(Box::new(assemble::Interim {
                        pipe,
                        model: Some(InterimModel::WordPiece(model)),
                    })),
                    None => Early::None,
                }
            }
            (early, _) => early,
        };
        // Anything `assemble` does not recognise is read whole, after
        // `Vocab::read` has validated it (as before invariant `assembled-equals-from-json`); the
        // rest
        // reads the canonical document (the skeleton with the tables put
        // back: merges keep their spelling, `spm_route` reads both).
        let mut value = assemble::reattach(skeleton, value);
        let whole = match early {
            Early::None => Some(Self::read_whole(path, json, &mut value, legacy)?),
            _ => None,
        };
        // Shared with a model build left to a thread (invariant `interim-equals-built`), which
        // reads its tables while the load reads the rest, and frees them.
        let value = std::sync::Arc::new(value);
        let staged = matches!(early, Early::Staged(..));
        let (mut pipe, frame) = match early {
            Early::Built(pipe) => (pipe::Pipe::ready(pipe, true), None),
            Early::Frame(frame) => (pipe::Pipe::deferred(path, json, routes, None), Some(frame)),
            Early::Deferred(interim) => (
                pipe::Pipe::deferred(path, json, routes, Some(*interim)),
                None,
            ),
            Early::Staged(parts, interim) => {
                let mut pipe = pipe::Pipe::staged(*parts, *interim, std::sync::Arc::clone(&value));
                if !routes.hold_model && !engine_may_take {
                    pipe.start();
                }
                (pipe, None)
            }
            Early::Parts(parts) => (
                pipe::Pipe::ready(
                    parts.build(value.get("model"), &BuildCancel::never())?,
                    true,
                ),
                None,
            ),
            Early::None => match whole {
                Some(pipe) => (pipe::Pipe::ready(pipe, false), None),
                None => return Err(Error::backend(NAME, "the pipeline was never read")),
            },
        };
        // What the load reads from the pipeline is the same in the skeleton's.
        let pipe_view = match (&frame, pipe.interim()) {
            (Some(frame), _) => frame,
            (None, Some(interim)) => &interim.pipe,
            (None, None) => &pipe.get()?.pipe,
        };
        let regex_split = value
            .get("pre_tokenizer")
            .and_then(regex_split::RegexSplit::new);
        let splits_always = probe(path, pipe_view, &value, regex_split.as_ref())?;
        let regex_split = match splits_always {
            true => regex_split.map(regex_split::RegexSplit::always),
            false => regex_split,
        };
        let file_padding = keep_padding_truncation
            && (pipe_view.get_padding().is_some() || pipe_view.get_truncation().is_some());
        // Padding kept runs `tokenizers`' whole pipeline, which cannot do
        // what the crate's walk does in its place.
        if file_padding && (splits_always || prefix_space || vocab.empty_model.is_some()) {
            return Err(Error::parse(
                path,
                "a `Split` regex tokenizers 1.0 cannot run, a `ByteLevel` pre-tokenizer's `add_prefix_space`, or an empty BPE vocabulary, with the file's padding or truncation kept is not supported",
            ));
        }
        let specials_as_text = policy == SpecialTokenPolicy::PlainText;
        let options = EncodeOptions {
            add_special_tokens: false,
            encode_special_tokens: specials_as_text,
            padding: if keep_padding_truncation {
                Override::InheritConfig
            } else {
                Override::Off
            },
            truncation: if keep_padding_truncation {
                Override::InheritConfig
            } else {
                Override::Off
            },
        };
        let role = |name: &str| -> Option<SpecialToken> {
            let content = config.special_token(name).or_else(|| {
                pipe_view
                    .get_token_for_role(&format!("{name}_token"))
                    .map(str::to_owned)
            })?;
            let id = vocab.by_token.get(content.as_str()).copied()?;
            Some(SpecialToken { content, id })
        };
        let mut special_tokens = SpecialTokens {
            bos: role("bos"),
            eos: role("eos"),
            unk: role("unk"),
            pad: role("pad"),
            sep: role("sep"),
            cls: role("cls"),
            mask: role("mask"),
            ..SpecialTokens::default()
        };
        special_tokens.additional = vocab
            .special
            .iter()
            .enumerate()
            .filter(|&(_, &s)| s)
            .filter_map(|(id, _)| {
                let id = u32::try_from(id).ok()?;
                let content = vocab.tokens.get(id as usize)?.as_deref()?.to_owned();
                Some(SpecialToken { content, id })
            })
            .collect();

        let class = config.tokenizer_class.as_deref().unwrap_or("");
        let class = class.strip_suffix("Fast").unwrap_or(class);
        let rebuild = REBUILDS_TEMPLATE.contains(&class)
            && (config.add_bos_token.is_some() || config.add_eos_token.is_some());
        let (prefix, suffix): (Vec<u32>, Vec<u32>) = if rebuild {
            let bos = config.add_bos_token.unwrap_or(true);
            let eos = config.add_eos_token.unwrap_or(false);
            (
                special_tokens
                    .bos
                    .as_ref()
                    .filter(|_| bos)
                    .map(|t| t.id)
                    .into_iter()
                    .collect(),
                special_tokens
                    .eos
                    .as_ref()
                    .filter(|_| eos)
                    .map(|t| t.id)
                    .into_iter()
                    .collect(),
            )
        } else {
            let single = &pipe_view.get_post_processor().single;
            (
                single.prefix.iter().map(|(t, _)| t.id()).collect(),
                single.suffix.iter().map(|(t, _)| t.id()).collect(),
            )
        };
        let spm = if file_padding && spm.is_ok() {
            Err(PADDING_KEPT.to_owned())
        } else {
            spm
        };
        let mut split = split_spec(&value, &vocab, &prefix, &suffix, file_padding);
        if prefix_space {
            // Chunk walks place spans by token lengths; the prefix space has
            // no text to stand on.
            split = SplitSpec::sequential("`ByteLevel` pre-tokenizer with `add_prefix_space`");
        }
        if vocab.empty_model.is_some() {
            split = SplitSpec::sequential("a BPE with an empty vocabulary");
        }
        if spm.is_ok() {
            split = split.with_min_bytes(SPM_ROUTE_MIN_BYTES);
        }
        let pieces = chunk::PieceNorm::new(pipe_view.get_normalizers());
        let bert = bert_norm::BertFast::new(pipe_view.get_normalizers());
        let nfc_only = routes.nfc
            && matches!(
                pipe_view.get_normalizers(),
                [tokenizers::pipeline::PipelineNormalizer::NFC(_)]
            );
        if nfc_only {
            nfc::prepare();
        }
        let unicode_steps = pipe_view.get_normalizers().iter().any(|n| {
            use tokenizers::pipeline::PipelineNormalizer as N;
            matches!(
                n,
                N::NFC(_) | N::NFD(_) | N::NFKC(_) | N::NFKD(_) | N::Bert(_)
            )
        });
        let whole_pieces = routes.whole_pieces && split_finds_nothing(&value);
        // Only where each segment is one word (a line): whole pieces, or no
        // pre-tokenizer at all (a SentencePiece conversion off its route).
        let segment_words = whole_pieces
            || value
                .get("pre_tokenizer")
                .is_none_or(serde_json::Value::is_null);
        let char_bpe = value
            .get("model")
            .is_some_and(|m| spm_route::check_char_bpe(m).is_ok());
        let joins = (routes.joins && segment_words && char_bpe)
            .then(|| JoinCuts::build(vocab.tokens.iter().flatten().map(|t| &**t)))
            .flatten();
        if joins.is_some() {
            split = split.with_min_bytes(JOIN_CUTS_MIN_BYTES);
        }
        let lone_replace = value
            .get("normalizer")
            .filter(|_| routes.lone_replace)
            .and_then(replace::LoneReplace::new);
        // The cuts are derived from the entries' bytes: only a model that
        // works on bytes sees the text as those rules do.
        let bytes_model = matches!(
            pipe_view.get_model(),
            tokenizers::pipeline::PipelineModel::BPE(bpe) if bpe.is_byte_level()
        );
        if !routes.cuts || !bytes_model {
            vocab.cuts = None;
        }
        let byte_bpe = vocab
            .byte_bpe
            .take()
            .filter(|_| bytes_model && routes.byte_bpe);
        let normalize = |content: &str| {
            nfc::normalize_chain(pipe_view.get_normalizers(), content, 0)
                .ok()
                .map(String::from)
        };
        let added = added::AddedMatcher::new(
            &value,
            pipe_view.get_added_vocabulary(),
            &normalize,
            routes.added,
        );
        if staged {
            match (&byte_bpe, file_padding) {
                (Some(_), false) => pipe.forgo(),
                _ if !routes.hold_model => pipe.start(),
                _ => {}
            }
        }
        Ok(Self {
            pipe,
            vocab,
            options,
            prefix,
            suffix,
            special_tokens,
            specials_as_text,
            file_padding,
            split,
            scratch: chunk::ScratchSlots::default(),
            prefix_space,
            pieces,
            bert,
            nfc_only,
            unicode_steps,
            added,
            regex_split,
            whole_pieces,
            joins,
            lone_replace,
            spm,
            byte_bpe,
        })
    }

    /// Whether the pipeline was built by [`assemble`] (one model build, this
    /// crate's word cache) rather than read whole by `tokenizers`.
    pub(crate) fn assembled(&self) -> bool {
        self.pipe.get().is_ok_and(|b| b.assembled)
    }

    /// Whether the lone NFC normalizer is run by the crate (invariant
    /// `crate-steps-equal-reference`).
    pub(crate) fn nfc_shortcut(&self) -> bool {
        self.nfc_only
    }

    /// Whether added tokens are matched on the crate's automaton (invariant
    /// `crate-steps-equal-reference`).
    pub(crate) fn added_automaton(&self) -> bool {
        self.added.is_some()
    }

    /// Whether a byte-level BPE's words run on the crate's engine.
    pub(crate) fn byte_bpe_active(&self) -> bool {
        self.byte_bpe.is_some()
    }

    /// Whether pieces skip the pre-tokenizer (invariant `crate-steps-equal-reference`).
    pub(crate) fn whole_pieces(&self) -> bool {
        self.whole_pieces
    }

    /// The skeleton pipeline a WordPiece file's interim engine reads its
    /// components from (invariant `interim-equals-built`): its vocabulary the unknown token and the
    /// added tokens that are entries, at the ids `vocab` has for them.
    fn wordpiece_frame(
        path: &Path,
        skeleton: &serde_json::Value,
        vocab: &Vocab,
    ) -> Option<PipelineTokenizer> {
        let added: Vec<(&str, u32)> = vocab
            .added
            .iter()
            .filter_map(|&id| Some((vocab.tokens.get(id as usize)?.as_deref()?, id)))
            .collect();
        let unk = skeleton
            .get("model")
            .and_then(|m| m.get("unk_token"))
            .and_then(serde_json::Value::as_str)?;
        let mut entries = added.clone();
        entries.push((unk, *vocab.by_token.get(unk)?));
        assemble::wordpiece_frame(path, skeleton, &entries, &added)
    }

    /// Whether encodes run on the interim engine (invariant `interim-equals-built`): the model is
    /// still being built.
    pub(crate) fn interim_active(&self) -> bool {
        self.pipe.interim().is_some()
    }

    /// Whether the crate runs the lone `Replace` normalizer (invariant
    /// `crate-steps-equal-reference`).
    pub(crate) fn lone_replace(&self) -> bool {
        self.lone_replace.is_some()
    }

    /// Whether CJK pre-tokens are cut for the model (invariant `cut-where-no-entry-joins`).
    pub(crate) fn char_cuts(&self) -> bool {
        self.vocab.cuts.is_some()
    }

    /// Whether whole pieces are cut where no entry joins (invariant `cut-where-no-entry-joins`).
    pub(crate) fn join_cuts(&self) -> bool {
        self.joins.is_some()
    }

    /// `tokenizers`' pipeline: built by the load, or waited for where the
    /// load left it building (invariant `background-build-invisible`).
    fn pipe(&self) -> Result<&PipelineTokenizer> {
        self.pipe.get().map(|b| &b.pipe)
    }

    /// Parses `json` and splits off its skeleton (the document without the
    /// model's vocabulary and merges), upgraded to the canonical form when
    /// the file is older ([`Prepared`]).
    fn prepare(path: &Path, json: &str) -> Result<Prepared> {
        let mut value: serde_json::Value = serde_json::from_str(json).map_err(|e| {
            Error::parse(
                path,
                format!("line {}, column {}: {e}", e.line(), e.column()),
            )
        })?;
        // tokenizers 1.0 reads only its canonical (version 2.0) form; older
        // files are upgraded by its own converter. Only the skeleton (the file
        // without `model.vocab` and `model.merges`, a few KB) is upgraded here;
        // the model is built from the tables as read (`assemble`, invariant
        // `assembled-equals-from-json`).
        let legacy = value.get("version").and_then(serde_json::Value::as_str) != Some("2.0");
        // tokenizers 1.0 refuses this flag; the crate's walk follows it.
        let prefix_space = legacy && take_prefix_space(&mut value);
        let mut skeleton = assemble::skeleton(&value);
        if legacy {
            no_panic(path, "upgrading tokenizer.json", || {
                tokenizers::canonicalize_value(&mut skeleton)
            })?
            .map_err(|e| Error::parse(path, format!("upgrading tokenizer.json: {e}")))?;
        }
        Ok(Prepared {
            value,
            skeleton,
            legacy,
            prefix_space,
        })
    }

    /// `tokenizers`' own read of the whole document: `json` as it is, or for
    /// a `legacy` file `value` (its canonical skeleton with the tables put
    /// back) upgraded in place, which only rewrites its merges
    /// (`canonicalize_value` is idempotent on the canonical parts).
    fn read_whole(
        path: &Path,
        json: &str,
        value: &mut serde_json::Value,
        legacy: bool,
    ) -> Result<PipelineTokenizer> {
        let canonical;
        let stand_in = assemble::stand_in_document(path, value)?;
        let json = if legacy || stand_in {
            if legacy {
                no_panic(path, "upgrading tokenizer.json", || {
                    tokenizers::canonicalize_value(value)
                })?
                .map_err(|e| Error::parse(path, format!("upgrading tokenizer.json: {e}")))?;
            }
            canonical = serde_json::to_string(value)
                .map_err(|e| Error::parse(path, format!("upgrading tokenizer.json: {e}")))?;
            canonical.as_str()
        } else {
            json
        };
        let pipe = no_panic(path, "tokenizer.json", || tokenizers::from_json(json))?
            .map_err(|e| Error::parse(path, format!("tokenizer.json: {e}")))?;
        // The reader gives an added token its model entry's id: none may be
        // a stand-in's.
        if stand_in && !assemble::same_added_ids(value, pipe.get_added_vocabulary()) {
            return Err(Error::parse(
                path,
                "an added token of this BPE with an empty vocabulary takes a stand-in id in tokenizers 1.0",
            ));
        }
        Ok(pipe)
    }

    /// `Ok` when encodes run on the SentencePiece engine, else why not.
    pub(crate) fn spm_route(&self) -> std::result::Result<(), &str> {
        self.spm.as_ref().map(|_| ()).map_err(String::as_str)
    }

    /// The model family, which decides how the parallel encoder may cut.
    #[allow(dead_code)]
    pub(crate) fn model_kind(&self) -> ModelKind {
        self.vocab.kind
    }

    fn sequence_ids(&self, text: &str) -> Result<Vec<u32>> {
        self.sequence_ids_with(text, &self.options)
    }

    /// The ids of `text` without template tokens. A BERT normalizer's text
    /// takes the chunk encoder's walk of the same stages, normalized by
    /// [`bert_norm`] (invariant `pipeline-walk-equals-pipeline`: faster at every length); so does a
    /// lone NFC normalizer's text of any length, normalized by [`nfc`]
    /// (invariant `crate-steps-equal-reference`: faster from 64 bytes up); and text holding a
    /// Unicode 17
    /// code point where the file's splits run on `fancy-regex` (invariant
    /// `unicode-classes-are-reference`).
    fn sequence_ids_with(&self, text: &str, options: &EncodeOptions) -> Result<Vec<u32>> {
        // One allocation: `piece_ids` hands the pipeline's buffer over as
        // the ids.
        let (mut ids, mut tokens) = (Vec::new(), Vec::new());
        self.piece_ids(text, options, &mut tokens, &mut ids)?;
        Ok(ids)
    }

    /// The ids of `text` appended to `ids` (`tokens`: a buffer for the
    /// pipeline's).
    fn piece_ids(
        &self,
        text: &str,
        options: &EncodeOptions,
        tokens: &mut Vec<PipelineToken>,
        ids: &mut Vec<u32>,
    ) -> Result<()> {
        tokens.clear();
        tokens.reserve(text.len() / 4 + 4);
        // The chunk encoder's walk (which fixes the folds itself) for every
        // BPE, so sequential encodes and chunks fill one word cache per
        // thread (invariant `pipeline-walk-equals-pipeline`), and for the other models where the
        // crate runs
        // a stage itself; `encode_into` for the rest.
        let walk = self.vocab.kind == ModelKind::Bpe
            || self.nfc_only
            || self.added.is_some()
            || self.pipe.interim().is_some()
            || self.bert.is_some()
            || (self.unicode_steps && !text.is_ascii())
            || self.regex_split.as_ref().is_some_and(|r| r.needs(text));
        if walk {
            self.plain_tokens(
                text,
                AsText::specials(options.encode_special_tokens),
                tokens,
            )?;
        } else {
            self.pipe()?
                .encode_into(text, options, tokens)
                .map_err(|e| Error::backend(NAME, e.to_string()))?;
        }
        if ids.capacity() == 0 {
            // Nothing allocated yet: same size and alignment, so this
            // collect takes the buffer over.
            *ids = std::mem::take(tokens).into_iter().map(u32::from).collect();
        } else {
            ids.extend_from_slice(PipelineToken::cast_slice(tokens));
        }
        Ok(())
    }

    fn encode_full_pipeline(&self, text: &str, add_special_tokens: bool) -> Result<Encoding> {
        let options = EncodeOptions {
            add_special_tokens,
            ..self.options.clone()
        };
        let mut encodings = self
            .pipe()?
            .encode(text, &options)
            .wait()
            .map_err(|e| Error::backend(NAME, e.to_string()))?;
        let encoding = encodings
            .pop()
            .ok_or_else(|| Error::backend(NAME, "no encoding returned"))?;
        Ok(Encoding::from_ids(
            PipelineToken::cast_slice(encoding.ids()).to_vec(),
        ))
    }
}

/// The `Auto` threshold on the SentencePiece route: the `.model` files'
/// (`sentencepiece::adapter`), since the same engine encodes.
const SPM_ROUTE_MIN_BYTES: usize = 256 << 10;

/// The `Auto` threshold on the join cuts' route (`docs/perf/design_log/byte_level.md` (entry 363)):
/// pieces merged
/// as words encode text seen once at 50–150 MB/s, not the 4–10 MB/s of one
/// BPE word per line that the whole-text threshold was measured on.
const JOIN_CUTS_MIN_BYTES: usize = 256 << 10;

/// The parallel family and edge rule of a canonical `tokenizer.json`.
fn split_spec(
    json: &serde_json::Value,
    vocab: &Vocab,
    prefix: &[u32],
    suffix: &[u32],
    file_padding: bool,
) -> SplitSpec {
    if file_padding {
        return SplitSpec::sequential("padding or truncation kept from the file");
    }
    let mut edges = EdgeRule::default();
    let mut normalized_added = false;
    let added = json
        .get("added_tokens")
        .and_then(serde_json::Value::as_array);
    for t in added.into_iter().flatten() {
        let flag = |k: &str| t.get(k).and_then(serde_json::Value::as_bool);
        let special = flag("special").unwrap_or(false);
        if let Some(content) = t.get("content").and_then(serde_json::Value::as_str) {
            edges.add_token(content);
        }
        normalized_added |= flag("normalized").unwrap_or(!special);
        edges.no_whitespace_edges |=
            flag("lstrip").unwrap_or(false) || flag("rstrip").unwrap_or(false);
        edges.no_word_edges |= flag("single_word").unwrap_or(false);
    }
    let facts = classify_hf(json, normalized_added);
    edges.normalizes = facts.normalizes;
    let max_token_bytes = vocab
        .normalized_len
        .iter()
        .flatten()
        .map(|&l| l as usize)
        .max()
        .unwrap_or(0);
    // Thresholds from `rtok bench` on two cores: the regex BPEs encode at
    // hundreds of MB/s, so only long inputs repay the fork and join
    // (re-measured on the faster engines: `docs/perf/design_log/lopt.md` (entry 304)).
    let min_bytes = match facts.family {
        SplitFamily::WordPiece => 32 << 10,
        SplitFamily::WholeTextBpe => 64 << 10,
        _ => 256 << 10,
    };
    SplitSpec::new(
        facts.family,
        prefix.to_vec(),
        suffix.to_vec(),
        max_token_bytes,
        edges,
    )
    .with_min_bytes(min_bytes)
}

impl Encoder for HfBackend {
    fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Encoding> {
        if self.file_padding {
            return self.encode_full_pipeline(text, add_special_tokens);
        }
        let ids = match &self.spm {
            Ok(route) => {
                let mut ids = Vec::with_capacity(text.len() / 3 + 4);
                route.encode(text, !self.specials_as_text, &mut ids);
                ids
            }
            Err(_) => self.sequence_ids(text)?,
        };
        if !add_special_tokens || (self.prefix.is_empty() && self.suffix.is_empty()) {
            return Ok(Encoding::from_ids(ids));
        }
        let mut out = EncodingBuilder::new(&self.prefix, &self.suffix, true, ids.len(), false);
        out.ids.extend_from_slice(&ids);
        out.finish(text.len(), NAME)
    }

    /// The chunk encoder over the whole text with every span on: one walk
    /// of the pipeline stages serves both.
    fn encode_with_offsets(&self, text: &str, add_special_tokens: bool) -> Result<Encoding> {
        let chunk = self.encode_chunk_impl(
            text,
            &ChunkRequest::new(0, 0, true),
            false,
            AsText::specials(self.specials_as_text),
        )?;
        let spans = chunk
            .offsets
            .ok_or_else(|| Error::backend(NAME, "no offsets from the chunk encoder"))?;
        let mut out = EncodingBuilder::new(
            &self.prefix,
            &self.suffix,
            add_special_tokens,
            chunk.ids.len(),
            true,
        );
        out.ids.extend_from_slice(&chunk.ids);
        if let Some(offsets) = out.offsets.as_mut() {
            offsets.extend_from_slice(&spans);
        }
        out.finish(text.len(), NAME)
    }

    fn parses_special_text(&self) -> bool {
        !self.specials_as_text
    }

    fn encode_plain(
        &self,
        text: &str,
        with_offsets: bool,
        markers: &[u32],
    ) -> Option<Result<Encoding>> {
        if !with_offsets && !markers.is_empty() {
            // Markers as text: the walk, which skips them as specials.
            let mut tokens = Vec::new();
            return Some(
                self.plain_tokens(text, AsText::plain(markers), &mut tokens)
                    .map(|()| Encoding::from_ids(PipelineToken::cast_slice(&tokens).to_vec())),
            );
        }
        if with_offsets {
            let chunk = self.encode_chunk_impl(
                text,
                &ChunkRequest::new(0, 0, true),
                false,
                AsText::plain(markers),
            );
            return Some(chunk.and_then(|c| {
                let offsets = c
                    .offsets
                    .ok_or_else(|| Error::backend(NAME, "no offsets from the chunk encoder"))?;
                Encoding::with_offsets(c.ids, offsets)
                    .ok_or_else(|| Error::backend(NAME, "chunk encoder: one span per id expected"))
            }));
        }
        if let Ok(route) = &self.spm {
            let mut ids = Vec::with_capacity(text.len() / 3 + 4);
            route.encode(text, false, &mut ids);
            return Some(Ok(Encoding::from_ids(ids)));
        }
        let options = EncodeOptions {
            add_special_tokens: false,
            encode_special_tokens: true,
            padding: Override::Off,
            truncation: Override::Off,
        };
        Some(
            self.sequence_ids_with(text, &options)
                .map(Encoding::from_ids),
        )
    }

    fn split_spec(&self) -> Option<&SplitSpec> {
        Some(&self.split)
    }

    /// Waits for a pipeline the load left building (invariants `background-build-invisible` and
    /// `interim-equals-built`),
    /// and makes the streaming table. A byte-level file on the crate's
    /// engine has no model build to wait for (`Pipe::forgo`).
    fn warm_up(&self) {
        let _ = self.vocab.stream();
        let _ = self.pipe.get();
    }

    fn building(&self) -> bool {
        self.interim_active()
    }

    fn encode_chunk(&self, text: &str, request: &ChunkRequest) -> Result<ChunkEncoding> {
        // The SentencePiece route's windows, as `.model` files give them,
        // when no added token lies in the chunk; spans elsewhere come from
        // the general walk.
        if let Ok(route) = &self.spm
            && !request.all_offsets
            && (self.specials_as_text || !route.has_added(text))
            && let Some(chunk) = route.encode_windows(text, request)
        {
            return Ok(chunk);
        }
        self.encode_chunk_impl(
            text,
            request,
            self.split.family.needs_boundaries(),
            AsText::specials(self.specials_as_text),
        )
    }
}

impl Decoder for HfBackend {
    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        // Byte-level: concatenating the table is the whole decoder, and checks
        // every id in the same pass.
        if let Some(table) = &self.vocab.decode_bytes {
            let mut out = Vec::with_capacity(ids.len() * 4);
            for &id in ids {
                let bytes = self
                    .vocab
                    .contains(id)
                    .then(|| table.get(id as usize))
                    .flatten()
                    .ok_or_else(|| Error::unknown_id(id, self.vocab.len()))?;
                if !(skip_special_tokens && self.is_special_id(id)) {
                    out.extend_from_slice(bytes);
                }
            }
            return Ok(match String::from_utf8(out) {
                Ok(s) => s,
                Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            });
        }
        if let Some(&bad) = ids.iter().find(|&&id| !self.vocab.contains(id)) {
            return Err(Error::unknown_id(bad, self.vocab.len()));
        }
        // Nothing to decode is the empty text; `tokenizers` 1.0's
        // `BPEDecoder` underflows on an empty token list.
        if ids
            .iter()
            .all(|&id| skip_special_tokens && self.is_special_id(id))
        {
            return Ok(String::new());
        }
        let pipe = self.pipe()?;
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pipe.decode(ids, skip_special_tokens)
        }))
        .map_err(|_| Error::backend(NAME, "decode: tokenizers 1.0 panicked on these ids"))?
        .map_err(|e| Error::backend(NAME, format!("decode: {e}")))
    }

    fn decode_style(&self) -> DecodeStyle {
        if self.vocab.decode_bytes.is_some() {
            DecodeStyle::ByteConcat
        } else if let Some(table) = self.vocab.stream() {
            DecodeStyle::ByteConcatWithStart(table.rule)
        } else {
            DecodeStyle::Windowed
        }
    }

    fn byte_piece(&self, id: u32) -> Option<u8> {
        self.vocab.byte_piece(id)
    }

    fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        let table = match (&self.vocab.decode_bytes, self.vocab.stream()) {
            (Some(table), _) => table,
            (None, Some(stream)) => &stream.bytes,
            (None, None) => return None,
        };
        self.vocab
            .contains(id)
            .then(|| table.get(id as usize).map(|b| &b[..]))
            .flatten()
    }

    fn first_token_bytes(&self, id: u32) -> Option<&[u8]> {
        match self.vocab.stream() {
            Some(stream) if !stream.first.is_empty() => self
                .vocab
                .contains(id)
                .then(|| stream.first.get(id as usize).map(|b| &b[..]))
                .flatten(),
            _ => self.token_bytes(id),
        }
    }
}

impl Tokenizer for HfBackend {
    fn backend_name(&self) -> &'static str {
        NAME
    }

    fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.vocab.by_token.get(token).copied()
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        self.vocab
            .tokens
            .get(id as usize)?
            .as_deref()
            .map(str::to_owned)
    }

    fn is_special_id(&self, id: u32) -> bool {
        self.vocab
            .special
            .get(id as usize)
            .copied()
            .unwrap_or(false)
    }

    fn special_tokens(&self) -> &SpecialTokens {
        &self.special_tokens
    }

    /// `added_tokens` entries with `"special": false`.
    fn added_tokens(&self) -> Vec<SpecialToken> {
        self.vocab
            .added
            .iter()
            .filter(|&&id| {
                !self
                    .vocab
                    .special
                    .get(id as usize)
                    .copied()
                    .unwrap_or(false)
            })
            .filter_map(|&id| {
                let content = self.vocab.tokens.get(id as usize)?.as_deref()?.to_owned();
                Some(SpecialToken { content, id })
            })
            .collect()
    }
}
