//! The load: a `tokenizer.json` read into an [`HfBackend`], phase by phase.
//! The pipeline's first half ([`Early`]) and this crate's tables
//! (`Vocab::read`) are read side by side; the interim engine is staged; the
//! pipeline is opened (built, deferred or staged, [`pipe::Pipe`]); then the
//! load reads from it what each encode route needs.

use std::path::Path;
use std::sync::Arc;
use tokenizers::pipeline::{EncodeOptions, Override, PipelineTokenizer};

use super::document::{Prepared, probe};
use super::interim::InterimModel;
use super::vocab::Vocab;
use super::{
    HfBackend, NAME, Routes, added, assemble, bert_norm, chunk, nfc, pipe, regex_split, replace,
    spm_route,
};
use crate::backend::BuildCancel;
use crate::backend::ascii_split;
use crate::backend::join_cuts::JoinCuts;
use crate::config::TokenizerConfig;
use crate::contract::family::classify_hf;
use crate::contract::{EdgeRule, SplitFamily, SplitSpec};
use crate::error::{Error, Result};
use crate::special::{SpecialToken, SpecialTokenPolicy, SpecialTokens};

/// Tokenizer classes whose transformers implementation rebuilds the
/// post-processor from `add_bos_token` / `add_eos_token`.
const REBUILDS_TEMPLATE: &[&str] = &[
    "LlamaTokenizer",
    "CodeLlamaTokenizer",
    "GemmaTokenizer",
    "CohereTokenizer",
];

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

/// A SentencePiece conversion on the native engine (invariant
/// `spm-route-same-merges`), or why the file stays on `tokenizers`.
type Spm = std::result::Result<spm_route::SpmRoute, spm_route::Refusal>;

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
        let doc = Self::prepare(path, json)?;
        let (legacy, prefix_space) = (doc.legacy, doc.prefix_space);
        let padding_kept = keep_padding_truncation && sets_padding(&doc.value);
        // The pipeline build and this crate's tables are independent reads of
        // the same document: they run side by side (invariant `assembled-equals-from-json`).
        // `Vocab::read` validates what `tokenizers` would panic on, and
        // `assemble` checks the same before its model build; the vocabulary's
        // error comes first. A file the SentencePiece route will encode gets
        // only the reader's skeleton pipeline here; the whole one is built on
        // a thread of its own (invariant `background-build-invisible`).
        let (early, vocab) = rayon::join(
            || Self::early(path, &doc, routes, padding_kept),
            || Vocab::read(path, &doc.value),
        );
        let mut vocab = vocab?;
        let (spm, early) = early?;
        // A byte-level file the crate's engine encodes may never need the
        // model (see `Pipe::forgo`): its build waits until that is known.
        let engine_may_take = routes.byte_bpe && vocab.byte_bpe.is_some() && !padding_kept;
        let early = Self::stage(path, &doc, &mut vocab, early, routes, engine_may_take)?;
        // Anything `assemble` does not recognise is read whole, after
        // `Vocab::read` has validated it (as before invariant `assembled-equals-from-json`); the
        // rest reads the canonical document (the skeleton with the tables put
        // back: merges keep their spelling, `spm_route` reads both).
        let value = assemble::reattach(doc.skeleton, doc.value);
        let staged = matches!(early, Early::Staged(..));
        let (mut pipe, frame, value) =
            Self::open_pipe(path, json, early, value, legacy, routes, engine_may_take)?;
        // What the load reads from the pipeline is the same in the skeleton's.
        let pipe_view = pipe_view(frame.as_ref(), &pipe)?;
        let (regex_split, file_padding) = read_splits(
            path,
            pipe_view,
            &value,
            &vocab,
            prefix_space,
            keep_padding_truncation,
        )?;
        let specials_as_text = policy == SpecialTokenPolicy::PlainText;
        let options = encode_options(keep_padding_truncation, specials_as_text);
        let special_tokens = special_tokens(config, pipe_view, &vocab);
        let (prefix, suffix) = template(config, &special_tokens, pipe_view);
        let spm = if file_padding && spm.is_ok() {
            Err(PADDING_KEPT.to_owned())
        } else {
            spm
        };
        let mut split = load_split(&value, &vocab, &prefix, &suffix, file_padding, prefix_space);
        if spm.is_ok() {
            split = split.with_min_bytes(SPM_ROUTE_MIN_BYTES);
        }
        let steps = Steps::new(pipe_view, &value, &mut vocab, routes);
        if steps.joins.is_some() {
            split = split.with_min_bytes(JOIN_CUTS_MIN_BYTES);
        }
        if staged {
            start_staged(&mut pipe, steps.byte_bpe.is_some(), file_padding, routes);
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
            pieces: steps.pieces,
            bert: steps.bert,
            nfc_only: steps.nfc_only,
            unicode_steps: steps.unicode_steps,
            added: steps.added,
            regex_split,
            ascii: value.get("pre_tokenizer").and_then(ascii_grammar),
            whole_pieces: steps.whole_pieces,
            joins: steps.joins,
            lone_replace: steps.lone_replace,
            spm,
            byte_bpe: steps.byte_bpe,
        })
    }

    /// The first half of the pipeline, read beside `Vocab::read`: whether
    /// the SentencePiece route takes the file, and what [`Early`] holds.
    fn early(
        path: &Path,
        doc: &Prepared,
        routes: Routes,
        padding_kept: bool,
    ) -> Result<(Spm, Early)> {
        let (value, skeleton) = (&doc.value, &doc.skeleton);
        let spm = if !routes.spm {
            Err("the route is switched off".to_owned())
        } else if padding_kept {
            Err(PADDING_KEPT.to_owned())
        } else {
            let tables = value.get("model").unwrap_or(&serde_json::Value::Null);
            spm_route::SpmRoute::recognise(skeleton, tables)
        };
        if spm.is_ok()
            && routes.assemble
            && let Some(frame) = assemble::frame_of(path, skeleton)
        {
            return Ok((spm, Early::Frame(frame)));
        }
        let parts = if routes.assemble {
            assemble::bpe_parts(path, value, skeleton, doc.legacy)?
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
        Ok((
            spm,
            Early::Built(parts.build(value.get("model"), &BuildCancel::never())?),
        ))
    }

    /// The first half staged behind the interim engine `Vocab::read` built
    /// (taken from `vocab`), where one encodes while the model builds
    /// (invariant `interim-equals-built`); else the model built now.
    fn stage(
        path: &Path,
        doc: &Prepared,
        vocab: &mut Vocab,
        early: Early,
        routes: Routes,
        engine_may_take: bool,
    ) -> Result<Early> {
        let (value, skeleton) = (&doc.value, &doc.skeleton);
        Ok(match (early, vocab.interim.take()) {
            (Early::Parts(parts), Some(InterimModel::Bpe(bpe))) => {
                match parts.interim(skeleton, Some(bpe))? {
                    Some(interim) => Early::Staged(parts, Box::new(interim)),
                    None => Early::Built(parts.build(value.get("model"), &BuildCancel::never())?),
                }
            }
            // A byte-level BPE: the interim pipeline holds no model.
            (Early::Parts(parts), None) if engine_may_take => {
                match parts.interim(skeleton, None)? {
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
                match Self::wordpiece_frame(path, skeleton, vocab) {
                    Some(pipe) => Early::Deferred(Box::new(assemble::Interim {
                        pipe,
                        model: Some(InterimModel::WordPiece(model)),
                    })),
                    None => Early::None,
                }
            }
            (early, _) => early,
        })
    }

    /// The pipeline as the load leaves it: built, read whole now (`value`,
    /// the canonical document), deferred to a thread, or staged behind an
    /// interim engine; with the reader's skeleton pipeline where the whole
    /// one is deferred, and the document, shared.
    fn open_pipe(
        path: &Path,
        json: &str,
        early: Early,
        mut value: serde_json::Value,
        legacy: bool,
        routes: Routes,
        engine_may_take: bool,
    ) -> Result<(
        pipe::Pipe,
        Option<PipelineTokenizer>,
        Arc<serde_json::Value>,
    )> {
        let whole = match early {
            Early::None => Some(Self::read_whole(path, json, &mut value, legacy)?),
            _ => None,
        };
        // Shared with a model build left to a thread (invariant `interim-equals-built`), which
        // reads its tables while the load reads the rest, and frees them.
        let value = Arc::new(value);
        let (pipe, frame) = match early {
            Early::Built(pipe) => (pipe::Pipe::ready(pipe, true), None),
            Early::Frame(frame) => (pipe::Pipe::deferred(path, json, routes, None), Some(frame)),
            Early::Deferred(interim) => (
                pipe::Pipe::deferred(path, json, routes, Some(*interim)),
                None,
            ),
            Early::Staged(parts, interim) => {
                let mut pipe = pipe::Pipe::staged(*parts, *interim, Arc::clone(&value));
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
        Ok((pipe, frame, value))
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
}

/// Whether the document sets padding or truncation.
fn sets_padding(value: &serde_json::Value) -> bool {
    ["padding", "truncation"]
        .iter()
        .any(|k| value.get(*k).is_some_and(|v| !v.is_null()))
}

/// The pipeline the load reads its components from: the reader's skeleton
/// pipeline (`frame`) where the whole one is deferred, the interim one where
/// the model builds; what it reads is the same in each.
fn pipe_view<'a>(
    frame: Option<&'a PipelineTokenizer>,
    pipe: &'a pipe::Pipe,
) -> Result<&'a PipelineTokenizer> {
    Ok(match (frame, pipe.interim()) {
        (Some(frame), _) => frame,
        (None, Some(interim)) => &interim.pipe,
        (None, None) => &pipe.get()?.pipe,
    })
}

/// A staged model build starts now, is forgone where the crate's
/// byte-level engine (`byte_bpe`) encodes every text (`Pipe::forgo`), or
/// waits for its first use (`routes.hold_model`).
fn start_staged(pipe: &mut pipe::Pipe, byte_bpe: bool, file_padding: bool, routes: Routes) {
    match (byte_bpe, file_padding) {
        (true, false) => pipe.forgo(),
        _ if !routes.hold_model => pipe.start(),
        _ => {}
    }
}

/// The grammar of a pre-tokenizer that is one `Split` of a known pattern
/// (`Isolated`, not inverted), alone, alone in a `Sequence` or before a
/// `ByteLevel` that does not split (`use_regex` false): its pieces are the
/// pattern's matches.
fn ascii_grammar(pre_tokenizer: &serde_json::Value) -> Option<ascii_split::Grammar> {
    let split = match pre_tokenizer.get("type")?.as_str()? {
        "Split" => pre_tokenizer,
        "Sequence" => match pre_tokenizer.get("pretokenizers")?.as_array()?.as_slice() {
            // The load's document keeps the `ByteLevel` step elsewhere.
            [split] => split,
            [split, byte_level]
                if byte_level.get("type")?.as_str()? == "ByteLevel"
                    && !byte_level.get("use_regex")?.as_bool()? =>
            {
                split
            }
            _ => return None,
        },
        _ => return None,
    };
    let isolated = split.get("type")?.as_str()? == "Split"
        && split.get("behavior")?.as_str()? == "Isolated"
        && !split
            .get("invert")
            .map_or(Some(false), serde_json::Value::as_bool)?;
    let pattern = split.get("pattern")?.get("Regex")?.as_str()?;
    isolated
        .then(|| ascii_split::Grammar::of(pattern))
        .flatten()
}

/// The pre-tokenizer's `fancy-regex` splits (on every text where
/// `tokenizers` 1.0 cannot run its regex, [`probe`]), and whether the
/// file's padding or truncation is kept: refused where the crate's walk
/// must stand in for a step, as padding kept runs `tokenizers`' whole
/// pipeline.
fn read_splits(
    path: &Path,
    pipe_view: &PipelineTokenizer,
    value: &serde_json::Value,
    vocab: &Vocab,
    prefix_space: bool,
    keep_padding_truncation: bool,
) -> Result<(Option<regex_split::RegexSplit>, bool)> {
    let regex_split = value
        .get("pre_tokenizer")
        .and_then(regex_split::RegexSplit::new);
    let splits_always = probe(path, pipe_view, value, regex_split.as_ref())?;
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
    Ok((regex_split, file_padding))
}

/// The options of the load's encodes: no template tokens (added by the
/// crate), the file's padding and truncation only where kept.
fn encode_options(keep_padding_truncation: bool, specials_as_text: bool) -> EncodeOptions {
    EncodeOptions {
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
    }
}

/// The special tokens' roles (the config's, else the pipeline's), and the
/// file's other special tokens.
fn special_tokens(
    config: &TokenizerConfig,
    pipe_view: &PipelineTokenizer,
    vocab: &Vocab,
) -> SpecialTokens {
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
    special_tokens
}

/// The ids `add_special_tokens` puts before and after the sequence: the
/// post-processor's, or where transformers rebuilds it from the config's
/// `add_bos_token` / `add_eos_token` ([`REBUILDS_TEMPLATE`]), those.
fn template(
    config: &TokenizerConfig,
    special_tokens: &SpecialTokens,
    pipe_view: &PipelineTokenizer,
) -> (Vec<u32>, Vec<u32>) {
    let class = config.tokenizer_class.as_deref().unwrap_or("");
    let class = class.strip_suffix("Fast").unwrap_or(class);
    let rebuild = REBUILDS_TEMPLATE.contains(&class)
        && (config.add_bos_token.is_some() || config.add_eos_token.is_some());
    if rebuild {
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
    }
}

/// How the parallel encoder may cut: [`split_spec`], sequential where a
/// chunk walk cannot place its spans.
fn load_split(
    value: &serde_json::Value,
    vocab: &Vocab,
    prefix: &[u32],
    suffix: &[u32],
    file_padding: bool,
    prefix_space: bool,
) -> SplitSpec {
    let mut split = split_spec(value, vocab, prefix, suffix, file_padding);
    if prefix_space {
        // Chunk walks place spans by token lengths; the prefix space has
        // no text to stand on.
        split = SplitSpec::sequential("`ByteLevel` pre-tokenizer with `add_prefix_space`");
    }
    if vocab.empty_model.is_some() {
        split = SplitSpec::sequential("a BPE with an empty vocabulary");
    }
    split
}

/// The pipeline stages the crate runs itself, or helps run, on the chunk
/// walk (invariant `crate-steps-equal-reference`); the fields of
/// [`HfBackend`] of the same names.
struct Steps {
    pieces: chunk::PieceNorm,
    bert: Option<bert_norm::BertFast>,
    nfc_only: bool,
    unicode_steps: bool,
    whole_pieces: bool,
    joins: Option<JoinCuts>,
    lone_replace: Option<replace::LoneReplace>,
    byte_bpe: Option<Arc<crate::backend::bpe::ByteBpe>>,
    added: Option<added::AddedMatcher>,
}

impl Steps {
    /// Read from the pipeline and the document, as `routes` allow; CJK cuts
    /// (`vocab.cuts`) are dropped where the model does not work on bytes,
    /// and the byte-level engine taken from `vocab` where it does.
    fn new(
        pipe_view: &PipelineTokenizer,
        value: &serde_json::Value,
        vocab: &mut Vocab,
        routes: Routes,
    ) -> Self {
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
        let whole_pieces = routes.whole_pieces && split_finds_nothing(value);
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
            value,
            pipe_view.get_added_vocabulary(),
            &normalize,
            routes.added,
        );
        Self {
            pieces,
            bert,
            nfc_only,
            unicode_steps,
            whole_pieces,
            joins,
            lone_replace,
            byte_bpe,
            added,
        }
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
