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
mod document;
mod interim;
mod load;
mod nfc;
mod pipe;
mod regex_split;
mod replace;

mod spm_route;
mod vocab;

use tokenizers::pipeline::{EncodeOptions, Override, PipelineToken, PipelineTokenizer};

use crate::backend::join_cuts::JoinCuts;
use crate::backend::{DecodeStyle, Decoder, Encoder, Tokenizer};
use crate::contract::{ChunkEncoding, ChunkRequest, SplitSpec};
use crate::encoding::{Encoding, EncodingBuilder};
use crate::error::{Error, Result};
use crate::special::{SpecialToken, SpecialTokens};
use chunk::AsText;
use document::{Prepared, no_panic, probe};
pub(crate) use vocab::ModelKind;
use vocab::Vocab;

const NAME: &str = "hf";

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
    /// The pre-tokenizer is one `Split` (then a non-splitting `ByteLevel`)
    /// of a pattern whose ASCII text the crate's masks cut (invariant
    /// `ascii-pieces-equal-regex`).
    ascii: Option<crate::backend::ascii_split::Grammar>,
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

impl HfBackend {
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

    /// The byte-level engine its words run on, for a caller that cuts the
    /// words itself (GGUF profiles split by regex).
    pub(crate) fn byte_bpe(&self) -> Option<&crate::backend::bpe::ByteBpe> {
        self.byte_bpe.as_deref()
    }

    /// Whether pieces skip the pre-tokenizer (invariant `crate-steps-equal-reference`).
    pub(crate) fn whole_pieces(&self) -> bool {
        self.whole_pieces
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
        tokens.reserve(text.len() / 3 + 4);
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
