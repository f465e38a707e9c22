//! The normalized → input map of one segment: how the normalizer chain acts
//! piece by piece ([`PieceNorm`]), the exact map of a segment's two ends the
//! windows walk ([`SegMap`]), and the whole map every-span encodes place
//! their pre-tokens on ([`full_map`]).

use std::borrow::Cow;
use tokenizers::pipeline::PipelineNormalizer;

use super::super::align::align;
use super::super::nfc::normalize_chain;
use crate::contract::split::stable_char;
use unicode_normalization::char::canonical_combining_class;
use unicode_normalization::{IsNormalized, is_nfc_quick};

/// How the normalizer chain acts piece by piece, worked out at load.
pub(in crate::backend::hf) struct PieceNorm {
    /// What the `Prepend` steps put before a segment.
    prepend: String,
    /// The chain applies compatibility decompositions (NFKC, NFKD, a
    /// SentencePiece charsmap), so pieces must break only before chars that
    /// are stable under them too.
    compat: bool,
    /// Each ASCII char normalized alone (without `Prepend`); `None` when the
    /// chain cannot be applied piece by piece at all.
    ascii: Option<Vec<Box<str>>>,
}

impl PieceNorm {
    pub(in crate::backend::hf) fn new(normalizers: &[PipelineNormalizer]) -> Self {
        let compat = normalizers.iter().any(|n| {
            matches!(
                n,
                PipelineNormalizer::NFKC(_)
                    | PipelineNormalizer::NFKD(_)
                    | PipelineNormalizer::Precompiled(_)
            )
        });
        let disabled = Self {
            prepend: String::new(),
            compat,
            ascii: None,
        };
        let probe = |s: &str| -> Option<String> {
            let full = normalize_chain(normalizers, s, 1).ok()?.into_owned();
            let bare = normalize_piece(normalizers, s, 1)?.into_owned();
            let prepend = full.strip_suffix(bare.as_str())?.to_owned();
            Some(prepend)
        };
        let Some(prepend) = probe("a") else {
            return disabled;
        };
        let mut ascii = Vec::with_capacity(128);
        for b in 0u8..128 {
            let s = char::from(b).to_string();
            match normalize_piece(normalizers, &s, 1) {
                Some(n) => ascii.push(n.into_owned().into_boxed_str()),
                None => return disabled,
            }
        }
        Self {
            prepend,
            compat,
            ascii: Some(ascii),
        }
    }

    /// Whether a piece may start at `c`: nothing in the chain joins `c` to
    /// the char before it (a starter that canonical, and with `compat`
    /// compatibility, composition never merges backwards).
    fn starts_piece(&self, c: char) -> bool {
        if self.compat {
            return stable_char(c);
        }
        c.is_ascii()
            || (canonical_combining_class(c) == 0
                && is_nfc_quick(std::iter::once(c)) != IsNormalized::Maybe)
    }
}

/// The chain without its `Prepend` steps, on one piece.
fn normalize_piece<'a>(
    normalizers: &[PipelineNormalizer],
    piece: &'a str,
    offset: usize,
) -> Option<Cow<'a, str>> {
    let mut cow: Cow<'a, str> = Cow::Borrowed(piece);
    for n in normalizers {
        if matches!(n, PipelineNormalizer::Prepend(_)) {
            continue;
        }
        let step = std::slice::from_ref(n);
        cow = match cow {
            Cow::Borrowed(s) => normalize_chain(step, s, offset).ok()?,
            Cow::Owned(s) => Cow::Owned(normalize_chain(step, &s, offset).ok()?.into_owned()),
        };
    }
    Some(cow)
}

/// Exact map of one end of a segment: piece starts in input and normalized
/// coordinates (ascending for the head, descending for the tail).
#[derive(Default)]
struct Region {
    inp: Vec<usize>,
    nrm: Vec<usize>,
    /// `kind[k]` for piece `k` (between entries `k` and `k + 1`): where the
    /// piece's input text sits, unchanged, inside its normalization
    /// ([`BLOCK`] when it does not).
    kind: Vec<u32>,
    /// A piece failed its check: the region cannot grow.
    stuck: bool,
}

/// A piece whose normalization does not contain its input text verbatim.
const BLOCK: u32 = u32::MAX;

/// Where `piece` sits inside its normalization `pn`: at offset 0 when
/// unchanged, after padding (BERT's spaces around CJK chars), or nowhere.
fn piece_kind(piece: &str, pn: &str) -> u32 {
    match pn.find(piece) {
        Some(off) if pn[off + piece.len()..].find(piece).is_none() => {
            u32::try_from(off).unwrap_or(BLOCK)
        }
        _ => BLOCK,
    }
}

/// Input position (relative to the piece) of position `rel` inside a piece
/// of input length `len` and the given kind: bytewise over the embedded
/// input text, the piece start before it, the piece end after it.
fn inside(kind: u32, rel: usize, len: usize) -> usize {
    if kind == BLOCK {
        return 0;
    }
    let off = kind as usize;
    if rel < off { 0 } else { (rel - off).min(len) }
}

/// Normalized → input positions for one segment, exact or unknown.
pub(super) struct SegMap<'a> {
    normalizers: &'a [PipelineNormalizer],
    pieces: &'a PieceNorm,
    segment: &'a str,
    /// Segment start in the chunk (also the normalizer's `offset`).
    pos: usize,
    norm: &'a str,
    identity: bool,
    head: Region,
    tail: Region,
}

/// The end of the piece starting at `i`: the next char a piece may start at.
fn piece_end(s: &str, i: usize, pieces: &PieceNorm) -> usize {
    let mut chars = s[i..].char_indices();
    let first = chars.next().map_or(0, |(_, c)| c.len_utf8());
    chars
        .find(|&(_, c)| pieces.starts_piece(c))
        .map_or(s.len(), |(d, _)| i + d)
        .max(i + first)
}

/// The start of the piece ending at `i`: the last char before it a piece may start at.
fn piece_start(s: &str, i: usize, pieces: &PieceNorm) -> usize {
    s[..i]
        .char_indices()
        .rev()
        .find(|&(_, c)| pieces.starts_piece(c))
        .map_or(0, |(d, _)| d)
}

impl<'a> SegMap<'a> {
    pub(super) fn new(
        normalizers: &'a [PipelineNormalizer],
        pieces: &'a PieceNorm,
        segment: &'a str,
        pos: usize,
        norm: &'a str,
    ) -> Self {
        let identity = norm == segment;
        let usable = pieces.ascii.is_some();
        let mut head = Region {
            inp: vec![0],
            nrm: vec![0],
            kind: Vec::new(),
            stuck: !usable,
        };
        let prepend = pieces.prepend.as_str();
        if !identity && !prepend.is_empty() {
            if norm.starts_with(prepend) {
                head.inp.push(0);
                head.nrm.push(prepend.len());
                head.kind.push(BLOCK);
            } else {
                head.stuck = true;
            }
        }
        let tail = Region {
            inp: vec![segment.len()],
            nrm: vec![norm.len()],
            kind: Vec::new(),
            stuck: !usable,
        };
        Self {
            normalizers,
            pieces,
            segment,
            pos,
            norm,
            identity,
            head,
            tail,
        }
    }

    fn piece_norm(&self, piece: &'a str, offset: usize) -> Option<Cow<'a, str>> {
        let ascii = self.pieces.ascii.as_ref()?;
        if let [b] = piece.as_bytes()
            && let Some(n) = ascii.get(usize::from(*b))
        {
            return Some(Cow::Owned(n.to_string()));
        }
        normalize_piece(self.normalizers, piece, offset)
    }

    /// Adds one piece to the head region.
    fn grow_head(&mut self) -> bool {
        let (Some(&i), Some(&nm)) = (self.head.inp.last(), self.head.nrm.last()) else {
            return false;
        };
        if self.head.stuck || i >= self.segment.len() {
            return false;
        }
        let j = piece_end(self.segment, i, self.pieces);
        let piece = &self.segment[i..j];
        let ok = self.piece_norm(piece, self.pos + i).and_then(|pn| {
            let fits = self
                .norm
                .get(nm..)
                .is_some_and(|rest| rest.starts_with(pn.as_ref()));
            fits.then(|| (pn.len(), piece_kind(piece, &pn)))
        });
        match ok {
            Some((len, kind)) => {
                self.head.inp.push(j);
                self.head.nrm.push(nm + len);
                self.head.kind.push(kind);
                true
            }
            None => {
                self.head.stuck = true;
                false
            }
        }
    }

    /// Adds one piece to the tail region (going backwards).
    fn grow_tail(&mut self) -> bool {
        let (Some(&i), Some(&nm)) = (self.tail.inp.last(), self.tail.nrm.last()) else {
            return false;
        };
        if self.tail.stuck || i == 0 {
            return false;
        }
        let j = piece_start(self.segment, i, self.pieces);
        let piece = &self.segment[j..i];
        let prepend = if j == 0 {
            self.pieces.prepend.as_str()
        } else {
            ""
        };
        let ok = self.piece_norm(piece, self.pos + j).and_then(|pn| {
            let before = self.norm.get(..nm)?;
            let rest = before.strip_suffix(pn.as_ref())?;
            // The first piece must leave exactly the prepend before it.
            if j == 0 && rest != prepend {
                return None;
            }
            Some((pn.len(), piece_kind(piece, &pn)))
        });
        match ok {
            Some((len, kind)) => {
                self.tail.inp.push(j);
                self.tail.nrm.push(nm - len);
                self.tail.kind.push(kind);
                if j == 0 && !prepend.is_empty() {
                    self.tail.inp.push(0);
                    self.tail.nrm.push(0);
                    self.tail.kind.push(BLOCK);
                }
                true
            }
            None => {
                self.tail.stuck = true;
                false
            }
        }
    }

    /// Chunk position of normalized position `n`, growing the region on the
    /// side the caller walks from; `None` when it cannot be known exactly.
    pub(super) fn locate(&mut self, n: usize, from_head: bool) -> Option<usize> {
        if !self.identity && n <= self.norm.len() {
            if from_head {
                while self.head.nrm.last().is_some_and(|&last| last < n) {
                    if !self.grow_head() {
                        return None;
                    }
                }
            } else {
                while self.tail.nrm.last().is_some_and(|&last| last > n) {
                    if !self.grow_tail() {
                        return None;
                    }
                }
            }
        }
        self.peek(n, from_head)
    }

    /// [`Self::locate`] without growing a region.
    pub(super) fn peek(&self, n: usize, from_head: bool) -> Option<usize> {
        if self.identity {
            return Some(self.pos + n);
        }
        if n > self.norm.len() {
            return None;
        }
        if from_head {
            let r = &self.head;
            if r.nrm.last().is_none_or(|&last| last < n) {
                return None;
            }
            let k = r.nrm.partition_point(|&x| x <= n).checked_sub(1)?;
            let rel = match (r.kind.get(k), r.inp.get(k + 1)) {
                (Some(&kind), Some(&next)) if r.nrm[k] < n => {
                    r.inp[k] + inside(kind, n - r.nrm[k], next - r.inp[k])
                }
                _ => r.inp[k],
            };
            Some(self.pos + rel)
        } else {
            let r = &self.tail;
            let k = r.nrm.partition_point(|&x| x > n);
            let start = *r.nrm.get(k)?;
            // The piece holding `n` runs from entry `k` (its start) to entry `k - 1`.
            let piece = k
                .checked_sub(1)
                .and_then(|p| Some((*r.kind.get(p)?, *r.inp.get(p)?)));
            let rel = match piece {
                Some((kind, end)) if start < n => {
                    r.inp[k] + inside(kind, n - start, end - r.inp[k])
                }
                _ => r.inp[k],
            };
            Some(self.pos + rel)
        }
    }
}

/// The whole map from normalized to input positions of one segment
/// (`map[n]` for `n` in `0..=norm.len()`), for every-span encodes: exact piece
/// by piece, and aligned heuristically only from the first piece whose
/// normalization depends on its context (if any).
pub(super) fn full_map(
    normalizers: &[PipelineNormalizer],
    pieces: &PieceNorm,
    segment: &str,
    norm: &str,
) -> Vec<u32> {
    let to_u32 = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
    let mut map = SegMap::new(normalizers, pieces, segment, 0, norm);
    if map.identity {
        return (0..=norm.len()).map(to_u32).collect();
    }
    while map.grow_head() {}
    let r = &map.head;
    let mut out = vec![0u32; norm.len() + 1];
    let (Some(&done_in), Some(&done_nm)) = (r.inp.last(), r.nrm.last()) else {
        return align(segment, norm);
    };
    for k in 0..r.kind.len() {
        let (i0, i1, n0, n1) = (r.inp[k], r.inp[k + 1], r.nrm[k], r.nrm[k + 1]);
        for (d, slot) in out[n0..n1].iter_mut().enumerate() {
            *slot = to_u32(i0 + inside(r.kind[k], d, i1 - i0));
        }
        out[n1] = to_u32(r.inp[k + 1]);
    }
    if done_nm < norm.len() || done_in < segment.len() {
        // The rest, from the last exact piece boundary, the heuristic way.
        let rest = align(&segment[done_in..], &norm[done_nm..]);
        for (k, v) in rest.into_iter().enumerate() {
            out[done_nm + k] = to_u32(done_in).saturating_add(v);
        }
    }
    out
}
