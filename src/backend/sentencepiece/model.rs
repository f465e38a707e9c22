//! [`SentencePieceModel`]: loading, encoding, decoding and metadata, with the
//! behaviour of sentencepiece 0.2.3's `SentencePieceProcessor`
//! (`EncodeOptimized`, `PopulateSentencePieceText`, `DecodeOptimized`).

use std::cell::Cell;

use super::bpe::{Bpe, BpeScratch};
use super::error::SpmError;
use super::normalizer::{Normalizer, PrefixMatcher};
use super::piece_table::PieceTable;
use super::proto::{ModelType, PieceType};
use super::simple;
use super::unigram::{Unigram, UnigramScratch};
use super::utf8::{SPACE_MARK, push_bytes_lossy};

/// Loading: the phases of [`SentencePieceModel::from_bytes`].
mod load;
mod sinks;

use sinks::{IdSink, OffsetSink, PosMap, RawCursor, SpanSink, floor_to_chars};
pub(crate) use sinks::{PieceSink, SpanWindows};

/// sentencepiece's id `-1` ("no such piece").
pub(crate) const NO_ID: u32 = u32::MAX;

/// The piece table with sentencepiece's two lookup maps.
#[derive(Debug, Clone)]
pub(crate) struct Vocab {
    text: String,
    spans: Vec<(usize, usize)>,
    scores: Vec<f32>,
    kinds: Vec<PieceType>,
    in_map: Vec<bool>,
    /// sentencepiece's `pieces_`: NORMAL/USER_DEFINED/UNUSED, or every piece for BPE.
    pieces: PieceTable,
    /// sentencepiece's `reserved_id_map_` (empty for BPE).
    reserved: PieceTable,
    /// The model's `unk_id_` (the UNKNOWN piece) or [`NO_ID`].
    unk: u32,
}

impl Vocab {
    pub(crate) fn len(&self) -> usize {
        self.kinds.len()
    }
    #[inline]
    pub(crate) fn piece(&self, id: u32) -> &[u8] {
        self.piece_str(id).as_bytes()
    }
    #[inline]
    pub(crate) fn piece_str(&self, id: u32) -> &str {
        self.spans
            .get(id as usize)
            .and_then(|&(s, e)| self.text.get(s..e))
            .unwrap_or_default()
    }
    #[inline]
    pub(crate) fn score(&self, id: u32) -> f32 {
        self.scores.get(id as usize).copied().unwrap_or(0.0)
    }
    /// The piece type (UNUSED for an out-of-range id, which never occurs).
    #[inline]
    pub(crate) fn kind(&self, id: u32) -> PieceType {
        self.kinds
            .get(id as usize)
            .copied()
            .unwrap_or(PieceType::Unused)
    }
    /// Whether the piece is in sentencepiece's maps (a `"\0"` UNUSED piece is not).
    #[inline]
    pub(crate) fn in_map(&self, id: u32) -> bool {
        self.in_map.get(id as usize).copied().unwrap_or(false)
    }
    /// A piece that BPE may produce by merging.
    #[inline]
    pub(crate) fn mergeable(&self, id: u32) -> bool {
        self.in_map(id) && self.kind(id).is_normal_like()
    }
    /// `PieceToIdNoReserved` without the unk fallback.
    #[inline]
    pub(crate) fn lookup_no_reserved(&self, piece: &[u8]) -> Option<u32> {
        self.pieces.get(piece, |id| self.piece(id))
    }
    /// `PieceToId`: reserved map, then pieces, then the unk id (maybe [`NO_ID`]).
    pub(crate) fn spm_piece_to_id(&self, piece: &[u8]) -> u32 {
        if piece.is_empty() {
            return self.unk;
        }
        self.reserved
            .get(piece, |id| self.piece(id))
            .or_else(|| self.lookup_no_reserved(piece))
            .unwrap_or(self.unk)
    }
    /// The model's unk id, [`NO_ID`] when there is none.
    #[inline]
    pub(crate) fn unk_id_raw(&self) -> u32 {
        self.unk
    }
}

#[derive(Debug, Clone)]
enum Engine {
    Bpe(Box<Bpe>),
    Unigram(Unigram),
    Word,
    Char,
}

/// Per-thread reusable buffers for encoding.
#[derive(Debug, Default)]
struct Scratch {
    normalized: Vec<u8>,
    n2o: Vec<usize>,
    bpe: BpeScratch,
    unigram: UnigramScratch,
}

impl Scratch {
    /// Drops very large work buffers after a huge input so idle threads do
    /// not keep them (the memos are bounded on their own).
    fn trim(&mut self) {
        const KEEP: usize = 4 << 20;
        if self.normalized.capacity() > KEEP {
            self.normalized = Vec::new();
        }
        if self.n2o.capacity() > KEEP / 8 {
            self.n2o = Vec::new();
        }
        self.unigram.trim(KEEP);
        self.bpe.trim(KEEP);
    }
}

thread_local! {
    static SCRATCH: Cell<Option<Box<Scratch>>> = const { Cell::new(None) };
}

/// Runs `f` with this thread's scratch buffers (or fresh ones when they are
/// in use by an outer call or the thread is shutting down).
fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    let mut scratch = SCRATCH
        .try_with(Cell::take)
        .ok()
        .flatten()
        .unwrap_or_default();
    let r = f(&mut scratch);
    scratch.trim();
    let _ = SCRATCH.try_with(|c| c.set(Some(scratch)));
    r
}

/// Trainer and normalizer settings carried by the model (informational).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpmSettings {
    /// `normalizer_spec.name` (e.g. `nmt_nfkc`, `identity`).
    pub normalizer_name: String,
    /// A precompiled charsmap is present.
    pub has_charsmap: bool,
    /// `normalizer_spec.add_dummy_prefix`.
    pub add_dummy_prefix: bool,
    /// `normalizer_spec.remove_extra_whitespaces`.
    pub remove_extra_whitespaces: bool,
    /// `normalizer_spec.escape_whitespaces`.
    pub escape_whitespaces: bool,
    /// `trainer_spec.treat_whitespace_as_suffix`.
    pub treat_whitespace_as_suffix: bool,
    /// `trainer_spec.byte_fallback`.
    pub byte_fallback: bool,
    /// `trainer_spec.split_digits` (training only; does not affect encoding).
    pub split_digits: bool,
    /// `trainer_spec.split_by_whitespace` (training only).
    pub split_by_whitespace: bool,
    /// `trainer_spec.split_by_unicode_script` (training only).
    pub split_by_unicode_script: bool,
    /// `trainer_spec.split_by_number` (training only).
    pub split_by_number: bool,
    /// `trainer_spec.allow_whitespace_only_pieces` (training only).
    pub allow_whitespace_only_pieces: bool,
    /// `trainer_spec.max_sentencepiece_length` (training only).
    pub max_sentencepiece_length: i32,
    /// `trainer_spec.vocab_size` as recorded (the real size is the piece count).
    pub trainer_vocab_size: i32,
    /// `trainer_spec.{unk,bos,eos,pad}_id` as recorded (the effective ids come
    /// from the pieces, see [`SentencePieceModel::bos_id`]).
    pub trainer_ids: [i32; 4],
    /// A `denormalizer_spec` with a charsmap is applied after decoding.
    pub has_denormalizer: bool,
}

/// A loaded SentencePiece model. Immutable, `Send + Sync`.
#[derive(Debug, Clone)]
pub struct SentencePieceModel {
    vocab: Vocab,
    model_type: ModelType,
    engine: Engine,
    matcher: PrefixMatcher,
    normalizer: Normalizer,
    denormalizer: Option<Normalizer>,
    byte_fallback: bool,
    byte_ids: Box<[u32; 256]>,
    unk_id: Option<u32>,
    bos_id: Option<u32>,
    eos_id: Option<u32>,
    pad_id: Option<u32>,
    unk_surface: String,
    add_dummy_prefix: bool,
    remove_extra_whitespaces: bool,
    settings: SpmSettings,
    /// Encode may skip normalization (identity normalizer, see `Bpe::encode_raw`).
    raw_bpe: bool,
    /// Streaming table: bytes of every piece as decode renders it.
    stream_bytes: Vec<u8>,
    stream_spans: Vec<(usize, usize)>,
}

fn byte_piece_value(piece: &[u8]) -> Option<u8> {
    // Exactly "<0xXX>" with upper-case hex digits (`absl::StrFormat("<0x%02X>")`).
    let hex = piece.strip_prefix(b"<0x")?.strip_suffix(b">")?;
    if hex.len() != 2
        || !hex
            .iter()
            .all(|c| c.is_ascii_digit() || (b'A'..=b'F').contains(c))
    {
        return None;
    }
    let s = std::str::from_utf8(hex).ok()?;
    u8::from_str_radix(s, 16).ok()
}

impl SentencePieceModel {
    fn build_stream_table(&mut self) {
        let mut bytes = Vec::with_capacity(self.vocab.text.len());
        let mut spans = Vec::with_capacity(self.vocab.len());
        for id in 0..self.vocab.len() as u32 {
            let start = bytes.len();
            match self.vocab.kind(id) {
                // Rendered only when control pieces are not skipped.
                PieceType::Control => bytes.extend_from_slice(self.vocab.piece(id)),
                PieceType::Byte => {
                    if let Some(b) = byte_piece_value(self.vocab.piece(id)) {
                        bytes.push(b);
                    }
                }
                PieceType::Unknown => bytes.extend_from_slice(self.unk_surface.as_bytes()),
                _ => replace_space_marks(&mut bytes, self.vocab.piece(id)),
            }
            spans.push((start, bytes.len()));
        }
        self.stream_bytes = bytes;
        self.stream_spans = spans;
    }

    // ------------------------------------------------------------------
    // Encoding

    fn is_unknown_raw(&self, id: u32) -> bool {
        id == NO_ID || Some(id) == self.unk_id || self.vocab.kind(id) == PieceType::Unknown
    }

    fn run_model<S: PieceSink>(
        &self,
        normalized: &[u8],
        scratch_bpe: &mut BpeScratch,
        scratch_uni: &mut UnigramScratch,
        sink: &mut S,
    ) {
        match &self.engine {
            Engine::Bpe(b) => {
                let valid =
                    !self.normalizer.has_charsmap() || std::str::from_utf8(normalized).is_ok();
                b.encode(
                    &self.vocab,
                    &self.matcher,
                    normalized,
                    valid,
                    scratch_bpe,
                    sink,
                );
            }
            Engine::Unigram(u) => u.encode(&self.vocab, normalized, scratch_uni, sink),
            Engine::Word => simple::encode_word(&self.vocab, normalized, sink),
            Engine::Char => simple::encode_char(&self.vocab, &self.matcher, normalized, sink),
        }
    }

    /// Token ids of `text`, identical to sentencepiece's `EncodeAsIds` (no
    /// BOS/EOS).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        self.encode_into(text, &mut ids);
        ids
    }

    /// Like [`encode`](Self::encode), writing into `ids` (cleared first) so
    /// the caller can reuse its buffer. Work buffers and the chunk memo are
    /// per thread.
    pub fn encode_into(&self, text: &str, ids: &mut Vec<u32>) {
        ids.clear();
        self.encode_append(text, ids);
    }

    /// Like [`encode_into`](Self::encode_into) but appends to `ids`, so a
    /// caller encoding a text in segments needs no buffer per segment and
    /// no copy.
    pub(crate) fn encode_append(&self, text: &str, ids: &mut Vec<u32>) {
        if text.is_empty() {
            return;
        }
        with_scratch(|s| {
            let Scratch {
                normalized,
                bpe,
                unigram,
                ..
            } = s;
            self.encode_uncached(text, ids, normalized, bpe, unigram);
        });
    }

    /// The BPE engine when the raw path applies (identity normalizer).
    fn raw_engine(&self) -> Option<&Bpe> {
        match &self.engine {
            Engine::Bpe(b) if self.raw_bpe => Some(b),
            _ => None,
        }
    }

    /// Runs the raw BPE path over the whole `text` into `sink`.
    fn run_raw<S: PieceSink>(&self, b: &Bpe, text: &str, scratch: &mut BpeScratch, sink: &mut S) {
        b.encode_raw(
            &self.vocab,
            &self.matcher,
            text.as_bytes(),
            self.add_dummy_prefix,
            scratch,
            sink,
        );
    }

    /// The raw path's ids of the whole `text`, appended to `ids`.
    fn encode_raw_ids(&self, b: &Bpe, text: &str, scratch: &mut BpeScratch, ids: &mut Vec<u32>) {
        ids.reserve(text.len() / 4);
        let mut sink = IdSink {
            model: self,
            ids,
            is_prev_unk: false,
        };
        self.run_raw(b, text, scratch, &mut sink);
    }

    fn encode_uncached(
        &self,
        text: &str,
        ids: &mut Vec<u32>,
        normalized: &mut Vec<u8>,
        bpe: &mut BpeScratch,
        unigram: &mut UnigramScratch,
    ) {
        if let Some(b) = self.raw_engine() {
            self.encode_raw_ids(b, text, bpe, ids);
            return;
        }
        ids.reserve(text.len() / 4);
        let mut sink = IdSink {
            model: self,
            ids,
            is_prev_unk: false,
        };
        self.normalizer
            .normalize(text.as_bytes(), normalized, None, Some(&self.matcher));
        self.run_model(normalized, bpe, unigram, &mut sink);
    }

    /// Token ids and, for each id, the byte span `[start, end)` of `text` it
    /// came from.
    ///
    /// The ids are exactly [`encode`](Self::encode)'s. The spans follow
    /// sentencepiece's `PopulateSentencePieceText`, plus one adjustment (the
    /// last rule) so that they always tile the input:
    /// - a piece maps to the input bytes of the normalizer chunks it covers;
    ///   the dummy-prefix space mark maps to an empty span at its position, so
    ///   a piece `▁Hello` at the start of `"Hello"` spans `0..5`;
    /// - an unknown character decomposed into byte pieces (byte fallback)
    ///   gives every byte piece but the last an empty span at the start of
    ///   the character, and the last byte piece the whole character;
    /// - a run of unknown characters merged into one unk id spans the run;
    /// - control ids (only WORD/CHAR models can produce them) get empty spans;
    /// - input removed by the normalizer (leading and trailing whitespace
    ///   with `remove_extra_whitespaces`) is given to the first and last
    ///   span: the first span starts at 0 and the last ends at `text.len()`.
    ///
    /// So spans are contiguous, in bounds, start at 0 and end at
    /// `text.len()` whenever `ids` is non-empty (no ids ⇒ no spans). Span ends
    /// are UTF-8 character boundaries of `text`.
    pub fn encode_with_offsets(
        &self,
        text: &str,
        ids: &mut Vec<u32>,
        offsets: &mut Vec<(usize, usize)>,
    ) {
        ids.clear();
        offsets.clear();
        if text.is_empty() {
            return;
        }
        with_scratch(|s| {
            let Scratch {
                normalized,
                n2o,
                bpe,
                unigram,
                ..
            } = s;
            if let Some(b) = self.raw_engine() {
                // The identity normalizer only escapes spaces: positions map
                // back by a cursor, with no normalized copy nor map (the
                // parallel encoder asks for spans on every chunk).
                let mut sink = OffsetSink {
                    model: self,
                    ids,
                    spans: SpanSink::All(offsets),
                    map: PosMap::Raw(RawCursor::new(text.as_bytes(), self.add_dummy_prefix)),
                    is_prev_unk: false,
                };
                self.run_raw(b, text, bpe, &mut sink);
                return;
            }
            self.normalizer
                .normalize(text.as_bytes(), normalized, Some(n2o), Some(&self.matcher));
            let mut sink = OffsetSink {
                model: self,
                ids,
                spans: SpanSink::All(offsets),
                map: PosMap::N2o(n2o),
                is_prev_unk: false,
            };
            self.run_model(normalized, bpe, unigram, &mut sink);
        });
        if let Some(first) = offsets.first_mut() {
            first.0 = 0;
        }
        if let Some(last) = offsets.last_mut() {
            last.1 = text.len();
        }
        floor_to_chars(text, offsets.iter_mut());
    }

    /// Ids of `text`, with the spans [`encode_with_offsets`](Self::encode_with_offsets)
    /// gives, but only for tokens starting before byte `head` and tokens
    /// ending after byte `text.len() - tail`: the parallel encoder's chunk
    /// windows, with no position mapping in between. `false` (and nothing
    /// written) when the model has no raw BPE path.
    pub(crate) fn encode_windows(
        &self,
        text: &str,
        head: usize,
        tail: usize,
        ids: &mut Vec<u32>,
        windows: &mut SpanWindows,
    ) -> bool {
        let Some(b) = self.raw_engine() else {
            return false;
        };
        ids.clear();
        let bytes = text.as_bytes();
        let dummy = self.add_dummy_prefix;
        *windows = SpanWindows::new(
            RawCursor::norm_of(bytes, dummy, head),
            RawCursor::norm_of(bytes, dummy, text.len().saturating_sub(tail)),
        );
        if text.is_empty() {
            return true;
        }
        with_scratch(|s| {
            let mut sink = OffsetSink {
                model: self,
                ids,
                spans: SpanSink::Windows(windows),
                map: PosMap::Raw(RawCursor::new(bytes, dummy)),
                is_prev_unk: false,
            };
            b.encode_raw(
                &self.vocab,
                &self.matcher,
                bytes,
                dummy,
                &mut s.bpe,
                &mut sink,
            );
        });
        // The same edge rules as `encode_with_offsets`.
        if let Some(first) = windows.head.first_mut() {
            first.0 = 0;
        }
        if windows.tail_first == Some(0)
            && let Some(first) = windows.tail.first_mut()
        {
            first.0 = 0;
        }
        if let Some(last) = windows.tail.last_mut() {
            last.1 = text.len();
        }
        if windows.head.len() == ids.len()
            && let Some(last) = windows.head.last_mut()
        {
            last.1 = text.len();
        }
        floor_to_chars(text, windows.head.iter_mut().chain(windows.tail.iter_mut()));
        true
    }

    /// The normalized form of `text` (as sentencepiece's `Normalize`), for
    /// diagnostics. May contain invalid UTF-8 only with a hostile charsmap.
    pub fn normalize(&self, text: &str) -> Vec<u8> {
        let mut out = Vec::new();
        self.normalizer
            .normalize(text.as_bytes(), &mut out, None, Some(&self.matcher));
        out
    }

    // ------------------------------------------------------------------
    // Decoding

    /// Decodes ids like sentencepiece's `DecodeIds`:
    /// - U+2581 becomes a space, and the space mark the dummy prefix added is
    ///   removed from the first piece (every leading one when
    ///   `remove_extra_whitespaces` is set);
    /// - consecutive byte pieces are reassembled; a byte that does not start
    ///   a valid UTF-8 sequence becomes U+FFFD (one per byte);
    /// - the unknown piece becomes the `unk_surface` (default `" ⁇ "`);
    /// - control pieces (`<s>`, `</s>`, …) produce nothing when
    ///   `skip_control` is true (sentencepiece's behaviour). With
    ///   `skip_control == false` their piece text is emitted verbatim
    ///   (this is not something sentencepiece offers).
    ///
    /// An id `>= vocab_size()` is an error, as in sentencepiece.
    pub fn decode(&self, ids: &[u32], skip_control: bool) -> Result<String, SpmError> {
        let mut out = Vec::with_capacity(ids.len() * 4);
        let mut byte_queue: Vec<u8> = Vec::new();
        let mut is_bos_ws = true;
        let n = self.vocab.len();
        for &id in ids {
            if id as usize >= n {
                return Err(SpmError::UnknownId(id));
            }
            let piece = self.vocab.piece(id);
            let kind = self.vocab.kind(id);
            if kind == PieceType::Byte {
                if let Some(b) = byte_piece_value(piece) {
                    byte_queue.push(b);
                }
                continue;
            }
            if !byte_queue.is_empty() {
                push_bytes_lossy(&mut out, &byte_queue);
                byte_queue.clear();
            }
            if !out.is_empty() {
                is_bos_ws = false;
            }
            if kind == PieceType::Control {
                if !skip_control {
                    out.extend_from_slice(piece);
                }
                continue;
            }
            let mut p = piece;
            let mut has_bos_ws = false;
            if is_bos_ws && (self.add_dummy_prefix || self.remove_extra_whitespaces) {
                if let Some(rest) = p.strip_prefix(SPACE_MARK) {
                    p = rest;
                    has_bos_ws = true;
                }
                if self.remove_extra_whitespaces {
                    has_bos_ws = false;
                }
            }
            if self.is_unknown_raw(id) {
                out.extend_from_slice(self.unk_surface.as_bytes());
            } else {
                replace_space_marks(&mut out, p);
            }
            if has_bos_ws || !out.is_empty() {
                is_bos_ws = false;
            }
        }
        if !byte_queue.is_empty() {
            push_bytes_lossy(&mut out, &byte_queue);
        }
        let mut text = String::from_utf8(out).map_err(|_| SpmError::DecodedNotUtf8)?;
        if let Some(d) = &self.denormalizer {
            let mut buf = Vec::new();
            d.normalize(text.as_bytes(), &mut buf, None, None);
            text = String::from_utf8(buf).map_err(|_| SpmError::DecodedNotUtf8)?;
        }
        Ok(text)
    }

    /// The bytes a piece contributes to decoded text, for streaming: U+2581
    /// already replaced by a space, a `<0xXX>` byte piece as its single byte,
    /// a control piece as its text (rendered only when controls are not
    /// skipped), the unknown piece as its `unk_surface`.
    ///
    /// The dummy-prefix space at the very start of a sequence is *not*
    /// stripped here; [`first_piece_bytes`](Self::first_piece_bytes) gives a
    /// piece as it renders there. Concatenated byte pieces may form invalid
    /// UTF-8; [`decode`](Self::decode) turns each bad byte into U+FFFD.
    /// `None` for an id out of range.
    pub fn piece_bytes(&self, id: u32) -> Option<&[u8]> {
        let &(s, e) = self.stream_spans.get(id as usize)?;
        self.stream_bytes.get(s..e)
    }

    /// The bytes of a piece when [`decode`](Self::decode) drops the dummy
    /// prefix from it (it is the first text of the sequence): without its
    /// leading space mark, for pieces other than control, byte and unknown
    /// ones. Other pieces render as [`piece_bytes`](Self::piece_bytes).
    pub fn first_piece_bytes(&self, id: u32) -> Option<&[u8]> {
        let bytes = self.piece_bytes(id)?;
        let plain = matches!(
            self.vocab.kind(id),
            PieceType::Normal | PieceType::UserDefined | PieceType::Unused
        ) && !self.is_unknown_raw(id);
        if plain && self.vocab.piece(id).starts_with(SPACE_MARK) {
            return bytes.get(1..);
        }
        Some(bytes)
    }

    /// Whether decoding is piece concatenation plus the dummy-prefix rule
    /// (no denormalizer rewrites the text afterwards).
    pub fn decodes_by_concatenation(&self) -> bool {
        self.denormalizer.is_none()
    }

    /// Whether [`decode`](Self::decode) strips the dummy prefix, and whether
    /// from every leading piece (`remove_extra_whitespaces`).
    pub fn strips_dummy_prefix(&self) -> Option<bool> {
        (self.add_dummy_prefix || self.remove_extra_whitespaces)
            .then_some(self.remove_extra_whitespaces)
    }

    // ------------------------------------------------------------------
    // Metadata

    /// Number of pieces (ids are `0..vocab_size()`).
    pub fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    /// The id of a piece (exact match, reserved pieces first, as
    /// sentencepiece's `PieceToId`), or `None` where sentencepiece would
    /// answer with the unknown id.
    pub fn piece_to_id(&self, piece: &str) -> Option<u32> {
        let p = piece.as_bytes();
        let text_of = |id| self.vocab.piece(id);
        self.vocab
            .reserved
            .get(p, text_of)
            .or_else(|| self.vocab.pieces.get(p, text_of))
    }

    /// The piece text of an id (with U+2581 for spaces).
    pub fn id_to_piece(&self, id: u32) -> Option<&str> {
        ((id as usize) < self.vocab.len()).then(|| self.vocab.piece_str(id))
    }

    /// The score of a piece.
    pub fn score(&self, id: u32) -> Option<f32> {
        self.vocab.scores.get(id as usize).copied()
    }

    /// The type of a piece.
    pub fn piece_type(&self, id: u32) -> Option<PieceType> {
        self.vocab.kinds.get(id as usize).copied()
    }

    /// `<s>` (or `trainer_spec.bos_piece`) when it is a CONTROL piece.
    pub fn bos_id(&self) -> Option<u32> {
        self.bos_id
    }
    /// `</s>` (or `trainer_spec.eos_piece`) when it is a CONTROL piece.
    pub fn eos_id(&self) -> Option<u32> {
        self.eos_id
    }
    /// The UNKNOWN piece named by `trainer_spec.unk_piece` (default `<unk>`).
    pub fn unk_id(&self) -> Option<u32> {
        self.unk_id
    }
    /// `<pad>` (or `trainer_spec.pad_piece`) when it is a CONTROL piece.
    pub fn pad_id(&self) -> Option<u32> {
        self.pad_id
    }

    /// Whether `id` is a CONTROL piece.
    pub fn is_control(&self, id: u32) -> bool {
        self.piece_type(id) == Some(PieceType::Control)
    }
    /// Whether `id` is a BYTE piece.
    pub fn is_byte(&self, id: u32) -> bool {
        self.piece_type(id) == Some(PieceType::Byte)
    }
    /// The byte a BYTE piece (`<0x0D>`) stands for; `None` for other ids.
    pub fn byte_value(&self, id: u32) -> Option<u8> {
        if !self.is_byte(id) {
            return None;
        }
        byte_piece_value(self.vocab.piece(id))
    }
    /// Whether `id` is the unknown piece.
    pub fn is_unknown(&self, id: u32) -> bool {
        (id as usize) < self.vocab.len() && self.is_unknown_raw(id)
    }
    /// Whether `id` is a USER_DEFINED piece.
    pub fn is_user_defined(&self, id: u32) -> bool {
        self.piece_type(id) == Some(PieceType::UserDefined)
    }
    /// Whether `id` is an UNUSED piece.
    pub fn is_unused(&self, id: u32) -> bool {
        self.piece_type(id) == Some(PieceType::Unused)
    }

    /// The segmentation algorithm.
    pub fn model_type(&self) -> ModelType {
        self.model_type
    }
    /// Whether encode adds a space mark in front of the text.
    pub fn adds_dummy_prefix(&self) -> bool {
        self.add_dummy_prefix
    }
    /// Whether byte fallback is on.
    pub fn byte_fallback(&self) -> bool {
        self.byte_fallback
    }
    /// The text decode emits for the unknown piece.
    pub fn unk_surface(&self) -> &str {
        &self.unk_surface
    }
    /// Trainer and normalizer settings.
    pub fn settings(&self) -> &SpmSettings {
        &self.settings
    }
}

fn replace_space_marks(out: &mut Vec<u8>, mut p: &[u8]) {
    while let Some(i) = p.windows(3).position(|w| w == SPACE_MARK) {
        out.extend_from_slice(&p[..i]);
        out.push(b' ');
        p = &p[i + 3..];
    }
    out.extend_from_slice(p);
}

#[cfg(test)]
mod tests;
