//! Where the segmentation goes: [`PieceSink`] and its two sinks, ids alone
//! with `EncodeOptimized`'s rules ([`IdSink`]) and ids with input spans
//! with `PopulateSentencePieceText`'s ([`OffsetSink`]), and the map from
//! normalized to input positions the spans need.

use super::{NO_ID, SentencePieceModel};
use crate::backend::sentencepiece::proto::PieceType;

/// Receives the segmentation of the normalized text, piece by piece.
pub(crate) trait PieceSink {
    /// `bytes` is the piece's text, found at byte `start` of the normalized
    /// text; `id` is a piece id or [`NO_ID`].
    fn piece(&mut self, start: usize, bytes: &[u8], id: u32);

    /// Consecutive ordinary pieces (neither unknown nor control) starting at
    /// byte `start` of the normalized text, with their byte lengths.
    fn plain(&mut self, start: usize, ids: &[u32], lens: &[u8]);

    /// One ordinary piece of `len` bytes at `start`.
    fn plain_one(&mut self, start: usize, len: usize, id: u32);

    /// Consecutive ordinary pieces as (id, byte length) starting at
    /// `start`: a memo hit on a long chunk, passed at once so a sink can
    /// copy the ids in one go.
    fn plain_pairs(&mut self, start: usize, pieces: &[(u32, u32)]) {
        let mut s = start;
        for &(id, len) in pieces {
            self.plain_one(s, len as usize, id);
            s += len as usize;
        }
    }
}

/// Collects ids with sentencepiece's `EncodeOptimized` rules.
pub(crate) struct IdSink<'a> {
    pub(super) model: &'a SentencePieceModel,
    pub(super) ids: &'a mut Vec<u32>,
    pub(super) is_prev_unk: bool,
}

impl PieceSink for IdSink<'_> {
    #[inline]
    fn piece(&mut self, _start: usize, bytes: &[u8], id: u32) {
        let m = self.model;
        if id != NO_ID && m.vocab.kind(id) == PieceType::Control {
            self.ids.push(id);
            self.is_prev_unk = false;
            return;
        }
        let is_unk = m.is_unknown_raw(id);
        if is_unk && m.byte_fallback {
            for &b in bytes {
                let bid = m.byte_ids[usize::from(b)];
                if bid != NO_ID {
                    self.ids.push(bid);
                }
            }
        } else if !(self.is_prev_unk && is_unk) && id != NO_ID {
            self.ids.push(id);
        }
        self.is_prev_unk = is_unk;
    }

    #[inline]
    fn plain(&mut self, _start: usize, ids: &[u32], _lens: &[u8]) {
        // Short slices: pushes beat a memcpy call.
        for &id in ids {
            self.ids.push(id);
        }
        self.is_prev_unk = false;
    }

    #[inline]
    fn plain_one(&mut self, _start: usize, _len: usize, id: u32) {
        self.ids.push(id);
        self.is_prev_unk = false;
    }

    #[inline]
    fn plain_pairs(&mut self, _start: usize, pieces: &[(u32, u32)]) {
        self.ids.extend(pieces.iter().map(|&(id, _)| id));
        self.is_prev_unk = false;
    }
}

/// Collects ids and input spans with `PopulateSentencePieceText`'s rules.
pub(super) struct OffsetSink<'a> {
    pub(super) model: &'a SentencePieceModel,
    pub(super) ids: &'a mut Vec<u32>,
    pub(super) spans: SpanSink<'a>,
    pub(super) map: PosMap<'a>,
    pub(super) is_prev_unk: bool,
}

/// Which spans an [`OffsetSink`] keeps.
pub(super) enum SpanSink<'a> {
    /// Every token's.
    All(&'a mut Vec<(usize, usize)>),
    /// Only those near the two ends (the parallel encoder's chunks).
    Windows(&'a mut SpanWindows),
}

/// Spans of the tokens starting before a head limit and of those ending
/// after a tail limit, both given as normalized positions, so tokens in
/// between cost no position mapping.
#[derive(Debug, Default)]
pub(crate) struct SpanWindows {
    head_norm: usize,
    tail_norm: usize,
    pub(crate) head: Vec<(usize, usize)>,
    pub(crate) tail: Vec<(usize, usize)>,
    /// Index of the first tail token.
    pub(crate) tail_first: Option<usize>,
    /// Normalized start of the last token, and whether it is in each window.
    last_start: usize,
    last_in: (bool, bool),
}

impl SpanWindows {
    /// Windows for the tokens starting before normalized `head_norm` and
    /// those ending after `tail_norm`.
    pub(super) fn new(head_norm: usize, tail_norm: usize) -> Self {
        Self {
            head_norm,
            tail_norm,
            ..Self::default()
        }
    }

    fn emit(&mut self, index: usize, qs: usize, qe: usize, map: &mut PosMap<'_>) {
        let in_head = qs < self.head_norm;
        let in_tail = qe > self.tail_norm;
        if in_head || in_tail {
            let span = (map.at(qs), map.at(qe));
            if in_head {
                self.head.push(span);
            }
            if in_tail {
                self.tail_first.get_or_insert(index);
                self.tail.push(span);
            }
        }
        self.last_start = qs;
        self.last_in = (in_head, in_tail);
    }

    /// The last token (index `index`) now ends at `qe` (merged unknowns).
    fn extend_last(&mut self, index: usize, qe: usize, map: &mut PosMap<'_>) {
        let qs = self.last_start;
        let end = map.at(qe);
        if self.last_in.0
            && let Some(last) = self.head.last_mut()
        {
            last.1 = end;
        }
        if self.last_in.1 {
            if let Some(last) = self.tail.last_mut() {
                last.1 = end;
            }
        } else if qe > self.tail_norm {
            let start = map.at(qs);
            self.tail_first.get_or_insert(index);
            self.tail.push((start, end));
            self.last_in.1 = true;
        }
    }
}

/// Normalized position to input position.
pub(super) enum PosMap<'a> {
    /// The normalizer's map, one entry per normalized byte.
    N2o(&'a [usize]),
    /// The raw BPE path's normalization, walked forward.
    Raw(RawCursor<'a>),
}

impl PosMap<'_> {
    #[inline]
    fn at(&mut self, q: usize) -> usize {
        match self {
            PosMap::N2o(n2o) => n2o.get(q).copied().unwrap_or(0),
            PosMap::Raw(cursor) => cursor.at(q),
        }
    }
}

/// Maps positions of `[U+2581 if dummy] + text` with every `' '` as U+2581
/// (the raw BPE path's view) back to `text`, for ascending queries.
pub(super) struct RawCursor<'a> {
    text: &'a [u8],
    /// Normalized length of the dummy prefix (0 or 3).
    lead: usize,
    norm: usize,
    orig: usize,
}

impl<'a> RawCursor<'a> {
    pub(super) fn new(text: &'a [u8], dummy: bool) -> Self {
        let lead = if dummy { SPACE_MARK_LEN } else { 0 };
        Self {
            text,
            lead,
            norm: lead,
            orig: 0,
        }
    }

    /// The normalized position of input position `orig` (a char boundary).
    pub(super) fn norm_of(text: &[u8], dummy: bool, orig: usize) -> usize {
        let orig = orig.min(text.len());
        let lead = if dummy { SPACE_MARK_LEN } else { 0 };
        lead + orig + (SPACE_MARK_LEN - 1) * count_spaces(&text[..orig])
    }

    fn at(&mut self, q: usize) -> usize {
        if q < self.norm {
            if q <= self.lead {
                return 0;
            }
            // Only merged unknowns look back; restart from the beginning.
            self.norm = self.lead;
            self.orig = 0;
        }
        // Whole blocks first (the space count vectorizes), then byte by byte.
        const BLOCK: usize = 64;
        while let Some(block) = self.text.get(self.orig..self.orig + BLOCK) {
            let next = self.norm + BLOCK + (SPACE_MARK_LEN - 1) * count_spaces(block);
            if next > q {
                break;
            }
            self.norm = next;
            self.orig += BLOCK;
        }
        while self.norm < q {
            let Some(&b) = self.text.get(self.orig) else {
                break;
            };
            self.norm += if b == b' ' { SPACE_MARK_LEN } else { 1 };
            self.orig += 1;
        }
        self.orig
    }
}

/// Moves span ends back onto char boundaries of `text`.
pub(super) fn floor_to_chars<'s>(text: &str, spans: impl Iterator<Item = &'s mut (usize, usize)>) {
    for span in spans {
        while span.0 > 0 && !text.is_char_boundary(span.0) {
            span.0 -= 1;
        }
        while span.1 > 0 && !text.is_char_boundary(span.1) {
            span.1 -= 1;
        }
    }
}

fn count_spaces(bytes: &[u8]) -> usize {
    // Byte-wide counters over 255-byte blocks vectorize far better than a
    // `usize` count.
    bytes
        .chunks(255)
        .map(|block| {
            usize::from(
                block
                    .iter()
                    .fold(0u8, |n, &b| n.wrapping_add(u8::from(b == b' '))),
            )
        })
        .sum()
}

/// Byte length of U+2581, the escaped space.
const SPACE_MARK_LEN: usize = 3;

impl OffsetSink<'_> {
    /// One token with normalized span `qs..qe`.
    #[inline(always)]
    fn emit(&mut self, id: u32, qs: usize, qe: usize) {
        let index = self.ids.len();
        self.ids.push(id);
        match &mut self.spans {
            SpanSink::All(offsets) => {
                let span = (self.map.at(qs), self.map.at(qe));
                offsets.push(span);
            }
            SpanSink::Windows(w) => w.emit(index, qs, qe, &mut self.map),
        }
    }

    /// The last token now ends at normalized `qe`.
    fn extend_last(&mut self, qe: usize) {
        let Some(index) = self.ids.len().checked_sub(1) else {
            return;
        };
        match &mut self.spans {
            SpanSink::All(offsets) => {
                let end = self.map.at(qe);
                if let Some(last) = offsets.last_mut() {
                    last.1 = end;
                }
            }
            SpanSink::Windows(w) => w.extend_last(index, qe, &mut self.map),
        }
    }
}

impl PieceSink for OffsetSink<'_> {
    fn piece(&mut self, start: usize, bytes: &[u8], id: u32) {
        let m = self.model;
        let (qs, qe) = (start, start + bytes.len());
        if id != NO_ID && m.vocab.kind(id) == PieceType::Control {
            self.emit(id, qs, qs);
            self.is_prev_unk = false;
            return;
        }
        let is_unk = m.is_unknown_raw(id);
        if is_unk && m.byte_fallback {
            // Every byte piece but the last gets an empty span at the
            // character's start; the last spans the character.
            for (i, &b) in bytes.iter().enumerate() {
                let bid = m.byte_ids[usize::from(b)];
                if bid != NO_ID {
                    self.emit(bid, qs, if i + 1 == bytes.len() { qe } else { qs });
                }
            }
        } else if self.is_prev_unk && is_unk {
            self.extend_last(qe);
        } else if id != NO_ID {
            self.emit(id, qs, qe);
        }
        self.is_prev_unk = is_unk;
    }

    fn plain(&mut self, start: usize, ids: &[u32], lens: &[u8]) {
        if let SpanSink::Windows(w) = &self.spans {
            // A run between the windows needs no spans at all (a piece is at
            // most 255 bytes). `last_start` need not be kept: only a merged unknown
            // reads it, and that follows an unknown piece, not this run.
            if start >= w.head_norm && start + 255 * lens.len() <= w.tail_norm {
                self.ids.extend_from_slice(ids);
                self.is_prev_unk = false;
                return;
            }
        }
        let mut s = start;
        for (&id, &len) in ids.iter().zip(lens) {
            let e = s + usize::from(len);
            self.emit(id, s, e);
            s = e;
        }
        self.is_prev_unk = false;
    }

    fn plain_one(&mut self, start: usize, len: usize, id: u32) {
        self.emit(id, start, start + len);
        self.is_prev_unk = false;
    }

    fn plain_pairs(&mut self, start: usize, pieces: &[(u32, u32)]) {
        if let SpanSink::Windows(w) = &self.spans {
            // As in `plain`: a run between the windows needs no spans.
            let len: usize = pieces.iter().map(|&(_, l)| l as usize).sum();
            if start >= w.head_norm && start + len <= w.tail_norm {
                self.ids.extend(pieces.iter().map(|&(id, _)| id));
                self.is_prev_unk = false;
                return;
            }
        }
        let mut s = start;
        for &(id, len) in pieces {
            let e = s + len as usize;
            self.emit(id, s, e);
            s = e;
        }
        self.is_prev_unk = false;
    }
}
