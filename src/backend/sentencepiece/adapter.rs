//! The facade's view of a [`SentencePieceModel`]: BOS/EOS from the config
//! beside the file, the special-token policy, typed errors.

use crate::backend::special_scan::SpecialScan;

use super::model::SpanWindows;
use super::{ModelType, SentencePieceModel, SpmError};
use crate::backend::{DecodeStyle, Decoder, Encoder, StartRule, Tokenizer, chunk_from_offsets};
use crate::config::TokenizerConfig;
use crate::contract::{ChunkEncoding, ChunkRequest, EdgeRule, SplitFamily, SplitSpec};
use crate::encoding::{Encoding, EncodingBuilder};
use crate::error::{Error, Result};
use crate::special::SpecialTokenPolicy;
use crate::special::{SpecialToken, SpecialTokens};

const NAME: &str = "sentencepiece";

pub(crate) struct SpmBackend {
    model: SentencePieceModel,
    special_tokens: SpecialTokens,
    /// Control and unknown pieces (`<s>`, `[INST]`, `<unk>`), matched in the
    /// text with the `Parse` policy as tokenizer.json's added tokens are.
    control_matcher: Option<SpecialScan>,
    prefix: Vec<u32>,
    suffix: Vec<u32>,
    split: SplitSpec,
}

impl SpmBackend {
    pub(crate) fn new(
        model: SentencePieceModel,
        config: &TokenizerConfig,
        policy: SpecialTokenPolicy,
    ) -> Result<Self> {
        let piece = |id: Option<u32>| -> Option<SpecialToken> {
            let id = id?;
            Some(SpecialToken {
                content: model.id_to_piece(id)?.to_owned(),
                id,
            })
        };
        let by_role = |role: &str, fallback: Option<u32>| -> Option<SpecialToken> {
            match config.special_token(role) {
                Some(content) => model
                    .piece_to_id(&content)
                    .map(|id| SpecialToken { content, id }),
                None => piece(fallback),
            }
        };
        let mut special_tokens = SpecialTokens {
            bos: by_role("bos", model.bos_id()),
            eos: by_role("eos", model.eos_id()),
            unk: by_role("unk", model.unk_id()),
            pad: by_role("pad", model.pad_id()),
            ..SpecialTokens::default()
        };
        let n = u32::try_from(model.vocab_size())
            .map_err(|_| Error::backend(NAME, "vocabulary too large"))?;
        let controls: Vec<u32> = (0..n)
            .filter(|&id| model.is_control(id) || model.is_unknown(id))
            .collect();
        special_tokens.additional = controls.iter().filter_map(|&id| piece(Some(id))).collect();
        let control_matcher = if policy == SpecialTokenPolicy::Parse && !controls.is_empty() {
            SpecialScan::new(
                controls
                    .iter()
                    .filter_map(|&id| Some((model.id_to_piece(id)?, id))),
            )
            .map_err(|e| Error::backend(NAME, format!("control-piece matcher: {e}")))?
        } else {
            None
        };
        // No config: sentencepiece adds nothing. A config follows transformers'
        // slow tokenizers: add_bos_token defaults to true, add_eos_token to false.
        let has_config = config.raw.is_some();
        let add_bos = config.add_bos_token.unwrap_or(has_config);
        let add_eos = config.add_eos_token.unwrap_or(false);
        let prefix: Vec<u32> = special_tokens
            .bos
            .as_ref()
            .filter(|_| add_bos)
            .map(|t| t.id)
            .into_iter()
            .collect();
        let suffix: Vec<u32> = special_tokens
            .eos
            .as_ref()
            .filter(|_| add_eos)
            .map(|t| t.id)
            .into_iter()
            .collect();
        let split = split_spec(&model, control_matcher.is_some(), &prefix, &suffix);
        Ok(Self {
            model,
            special_tokens,
            control_matcher,
            prefix,
            suffix,
            split,
        })
    }

    /// Encodes `text` with or without spans: the body of both `Encoder` methods.
    fn encode_impl(
        &self,
        text: &str,
        add_special_tokens: bool,
        with_offsets: bool,
    ) -> Result<Encoding> {
        let mut out = EncodingBuilder::new(
            &self.prefix,
            &self.suffix,
            add_special_tokens,
            text.len() / 3 + 4,
            with_offsets,
        );
        self.encode_segments(text, true, &mut out.ids, out.offsets.as_mut());
        out.finish(text.len(), NAME)
    }

    /// Encodes `text`, control pieces split out first when the policy parses
    /// them and `parse` allows.
    fn encode_segments(
        &self,
        text: &str,
        parse: bool,
        ids: &mut Vec<u32>,
        mut offsets: Option<&mut Vec<(usize, usize)>>,
    ) {
        let mut seg_ids = Vec::new();
        let mut seg_offsets = Vec::new();
        let mut encode = |s: usize,
                          e: usize,
                          ids: &mut Vec<u32>,
                          offsets: &mut Option<&mut Vec<(usize, usize)>>| {
            if s == e {
                return;
            }
            match offsets {
                Some(offsets) => {
                    self.model
                        .encode_with_offsets(&text[s..e], &mut seg_ids, &mut seg_offsets);
                    ids.extend_from_slice(&seg_ids);
                    offsets.extend(seg_offsets.iter().map(|&(a, b)| (a + s, b + s)));
                }
                None => self.model.encode_append(&text[s..e], ids),
            }
        };
        let mut pos = 0;
        if parse && let Some(scan) = &self.control_matcher {
            for m in scan.find_iter(text) {
                encode(pos, m.start, ids, &mut offsets);
                ids.push(m.id);
                if let Some(o) = offsets.as_mut() {
                    o.push((m.start, m.end));
                }
                pos = m.end;
            }
        }
        encode(pos, text.len(), ids, &mut offsets);
    }

    /// The engine itself, for `rtok inspect` and tests.
    #[allow(dead_code)]
    pub(crate) fn model(&self) -> &SentencePieceModel {
        &self.model
    }
}

/// The parallel family of a `.model` file (`docs/lopt.md`, claim C12).
///
/// BPE models are whole-text BPE: sentencepiece splits the normalized text
/// into words before each `▁` and runs score-ordered BPE inside each word,
/// which is the whole-text argument applied word by word. Unigram (Viterbi
/// over the whole text) has no lossless cut; WORD and CHAR models are rare
/// and not measured, so they stay sequential too.
fn split_spec(
    model: &SentencePieceModel,
    parses_controls: bool,
    prefix: &[u32],
    suffix: &[u32],
) -> SplitSpec {
    match model.model_type() {
        ModelType::Bpe => {}
        ModelType::Unigram => return SplitSpec::sequential("Unigram over unsplit text"),
        ModelType::Word | ModelType::Char => {
            return SplitSpec::sequential("SentencePiece WORD/CHAR model (not measured)");
        }
    }
    let settings = model.settings();
    let mut edges = EdgeRule::default();
    // User-defined pieces are matched on the raw text, longest first, like
    // added tokens; control pieces are split out first under `Parse`.
    let n = u32::try_from(model.vocab_size()).unwrap_or(u32::MAX);
    let mut max_token_bytes = 0;
    for id in 0..n {
        let Some(piece) = model.id_to_piece(id) else {
            continue;
        };
        max_token_bytes = max_token_bytes.max(piece.len());
        // The control matcher holds exactly the CONTROL and UNKNOWN pieces.
        let parsed_control = parses_controls && (model.is_control(id) || model.is_unknown(id));
        if model.is_user_defined(id) || parsed_control {
            edges.add_token(piece);
            if piece.contains('\u{2581}') {
                edges.add_token(&piece.replace('\u{2581}', " "));
            }
        }
    }
    // A charsmap (NFKC and friends) may join a char to the one before it;
    // collapsing whitespace runs makes a chunk edge beside whitespace move.
    edges.normalizes = settings.has_charsmap;
    edges.no_whitespace_edges = settings.remove_extra_whitespaces;
    // Threshold from `rtok bench` on two cores (Mistral v1 `.model`, prose
    // and code, 16 KiB to 1 MiB): from 256 KiB no run was slower.
    SplitSpec::new(
        SplitFamily::WholeTextBpe,
        prefix.to_vec(),
        suffix.to_vec(),
        max_token_bytes,
        edges,
    )
    .with_min_bytes(SPM_MIN_BYTES)
}

/// Inputs shorter than this are encoded sequentially in `Auto` mode.
const SPM_MIN_BYTES: usize = 256 << 10;

fn decode_error(e: SpmError, vocab_size: usize) -> Error {
    match e {
        SpmError::UnknownId(id) => Error::unknown_id(id, vocab_size),
        other => Error::backend(NAME, other.to_string()),
    }
}

impl Encoder for SpmBackend {
    fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Encoding> {
        self.encode_impl(text, add_special_tokens, false)
    }

    fn encode_with_offsets(&self, text: &str, add_special_tokens: bool) -> Result<Encoding> {
        self.encode_impl(text, add_special_tokens, true)
    }

    fn parses_special_text(&self) -> bool {
        self.control_matcher.is_some()
    }

    fn encode_plain(
        &self,
        text: &str,
        with_offsets: bool,
        _markers: &[u32],
    ) -> Option<Result<Encoding>> {
        let mut ids = Vec::with_capacity(text.len() / 3 + 4);
        let mut offsets = Vec::new();
        self.encode_segments(text, false, &mut ids, with_offsets.then_some(&mut offsets));
        Some(Ok(if with_offsets {
            match Encoding::with_offsets(ids, offsets) {
                Some(e) => e,
                None => return Some(Err(Error::backend(NAME, "one span per id expected"))),
            }
        } else {
            Encoding::from_ids(ids)
        }))
    }

    fn split_spec(&self) -> Option<&SplitSpec> {
        Some(&self.split)
    }

    /// Spans only near the chunk's ends when the model has the raw BPE path
    /// and the chunk holds no control piece; otherwise every span.
    fn encode_chunk(&self, text: &str, request: &ChunkRequest) -> Result<ChunkEncoding> {
        let controls = self
            .control_matcher
            .as_ref()
            .is_some_and(|scan| scan.is_match(text));
        if !request.all_offsets
            && !controls
            && let Some(chunk) = window_chunk(&self.model, text, request)
        {
            return Ok(chunk);
        }
        chunk_from_offsets(self, text, request)
    }
}

/// A parallel-encoder chunk with spans near its ends only (`SpanWindows`),
/// when the model has the raw BPE path; the caller checks the chunk holds no
/// text that is split out before the model. Shared with the HF backend's
/// SentencePiece route.
pub(crate) fn window_chunk(
    model: &SentencePieceModel,
    text: &str,
    request: &ChunkRequest,
) -> Option<ChunkEncoding> {
    let mut ids = Vec::with_capacity(text.len().max(request.reserve_bytes) / 3 + 4);
    let mut windows = SpanWindows::default();
    if !model.encode_windows(text, request.head, request.tail, &mut ids, &mut windows) {
        return None;
    }
    let tail_first = windows.tail_first.unwrap_or(ids.len());
    Some(ChunkEncoding {
        ids,
        head: windows.head,
        tail_first,
        tail: windows.tail,
        boundaries: Vec::new(),
        offsets: None,
    })
}

impl Decoder for SpmBackend {
    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        self.model
            .decode(ids, skip_special_tokens)
            .map_err(|e| decode_error(e, self.model.vocab_size()))
    }

    /// Piece concatenation, with the dummy-prefix space stripped at the
    /// start of a decode; a denormalizer needs the window.
    fn decode_style(&self) -> DecodeStyle {
        if !self.model.decodes_by_concatenation() {
            return DecodeStyle::Windowed;
        }
        DecodeStyle::ByteConcatWithStart(match self.model.strips_dummy_prefix() {
            Some(repeat) => StartRule::SentencePiece { repeat },
            None => StartRule::None,
        })
    }

    fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.model.piece_bytes(id)
    }

    fn first_token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.model.first_piece_bytes(id)
    }

    fn byte_piece(&self, id: u32) -> Option<u8> {
        self.model.byte_value(id)
    }
}

impl Tokenizer for SpmBackend {
    fn backend_name(&self) -> &'static str {
        NAME
    }

    fn vocab_size(&self) -> usize {
        self.model.vocab_size()
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.model.piece_to_id(token)
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        self.model.id_to_piece(id).map(str::to_owned)
    }

    fn is_special_id(&self, id: u32) -> bool {
        self.model.is_control(id)
    }

    fn special_tokens(&self) -> &SpecialTokens {
        &self.special_tokens
    }
}
