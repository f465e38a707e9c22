//! The chunk encode for `tokenizer.json` tokenizers: the parallel encoder's
//! chunks, (with every span on) `encode_with_offsets` itself, and (with no
//! window) a BPE's sequential encode, so one walk of the pipeline stages, and
//! one word cache per thread, serves all three.
//!
//! It runs exactly the stages of `PipelineTokenizer::encode_into` (added
//! tokens on raw text, normalize, added tokens on normalized text,
//! pre-tokenize, one `tokenize_spans` call per text piece), so the ids are the
//! pipeline's ids at the pipeline's speed.
//!
//! Spans are computed only for tokens near the two ends of the chunk, and only
//! exactly: token lengths are summed inside each pre-token (forward from a
//! segment's start for the head window, backward from its end for the tail
//! window), and a normalized position goes back to the input through a map
//! built by normalizing the segment piece by piece (a piece is a char no
//! normalizer joins to its predecessor, plus the marks after it) and checking
//! every piece against the real normalized text. Where that check fails the
//! window reports nothing, so the merge finds no cut there: a window is never
//! approximate. With every span on ([`ChunkRequest::all_offsets`]), each
//! pre-token is placed on its own through [`full_map`], exact piece by piece
//! and heuristic only past a piece whose normalization depends on context.

use std::borrow::Cow;
use tokenizers::pipeline::{
    Model, PipelineModelScratch, PipelineNormalizer, PipelinePatternMatcher, PipelineToken,
    PreTokenizer, PreTokenizerScratch, Span,
};
use tokenizers::vocab::bucket_added_vocabulary::AddedVocabulary as BucketAddedVocabulary;

use super::HfBackend;
use super::added::Found;
use super::align::align;
use super::nfc::normalize_chain;
use crate::backend::thread_scratch::ThreadScratch;
use crate::backend::word_cuts::{self, CutScratch, WordCuts};
use crate::contract::split::stable_char;
use crate::contract::{ChunkEncoding, ChunkRequest};
use crate::error::{Error, Result};
use unicode_normalization::char::canonical_combining_class;
use unicode_normalization::{IsNormalized, is_nfc_quick};

const NAME: &str = "hf";

/// One chunk encoder's working memory (the BPE word cache lives in it).
pub(super) struct Scratch {
    /// Made from the built model on its first use: the interim engine
    /// (invariant `interim-equals-built`) keeps its own.
    model: Option<PipelineModelScratch>,
    pre: PreTokenizerScratch,
    spans: Vec<Span>,
    /// The CJK cuts' (invariant `cut-where-no-entry-joins`).
    cuts: CutScratch,
    one: Vec<PipelineToken>,
}

/// A warm [`Scratch`] per thread and backend.
pub(super) type ScratchSlots = ThreadScratch<Scratch>;

fn err(e: impl std::fmt::Display) -> Error {
    Error::backend(NAME, e.to_string())
}

/// How the normalizer chain acts piece by piece, worked out at load.
pub(super) struct PieceNorm {
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
    pub(super) fn new(normalizers: &[PipelineNormalizer]) -> Self {
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
struct SegMap<'a> {
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
    fn new(
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
    fn locate(&mut self, n: usize, from_head: bool) -> Option<usize> {
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
    fn peek(&self, n: usize, from_head: bool) -> Option<usize> {
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

/// Which added tokens an encode keeps as text: the special ones (the
/// reference's `encode_special_tokens`) and, for a chat request's plain
/// stretches, the non-special control markers among them (sorted ids).
#[derive(Clone, Copy, Default)]
pub(super) struct AsText<'m> {
    pub specials: bool,
    pub markers: &'m [u32],
}

impl<'m> AsText<'m> {
    /// Special tokens as text or not; no markers.
    pub fn specials(on: bool) -> Self {
        Self {
            specials: on,
            markers: &[],
        }
    }

    /// Every special token and these markers as text.
    pub fn plain(markers: &'m [u32]) -> Self {
        Self {
            specials: true,
            markers,
        }
    }

    fn marker(&self, id: u32) -> bool {
        !self.markers.is_empty() && self.markers.binary_search(&id).is_ok()
    }
}

/// Where the windows are, in chunk coordinates.
#[derive(Clone, Copy)]
struct Windows<'m> {
    head: usize,
    tail_from: usize,
    /// Also compute every span (`encode_with_offsets`, or a chunk asked for all).
    all: bool,
    /// Record pre-token boundaries (the family cuts at them).
    bounds: bool,
    /// Which added tokens are text (the `PlainText` policy, or a plain
    /// encode asked for per call).
    as_text: AsText<'m>,
}

/// What one window learned.
#[derive(Default)]
struct Side {
    /// `(token index, span)`, in any order.
    known: Vec<(usize, (usize, usize))>,
    bounds: Vec<usize>,
    /// A position could not be mapped exactly: the window reports nothing.
    failed: bool,
}

struct Out {
    tokens: Vec<PipelineToken>,
    head: Side,
    tail: Side,
    /// Every span (when `all`).
    offsets: Vec<(usize, (usize, usize))>,
}

/// How a walk through one pre-token ended.
enum Flow {
    /// Every token of the pre-token was placed; it has this many.
    Done(usize),
    /// The walk left the window (or lost the map) inside the pre-token.
    Stop,
}

/// One pre-tokenized piece of normalized text.
struct Piece<'p> {
    text: &'p str,
    /// Normalized offset of the piece in its segment.
    base: usize,
    /// Bytes put in front of the normalized text (a `ByteLevel`
    /// pre-tokenizer's prefix space, invariant `crate-steps-equal-reference`): they stand for no
    /// text.
    shift: usize,
}

impl Piece<'_> {
    /// The normalized offset of position `at` of the piece's text.
    fn at(&self, at: u32) -> usize {
        self.base + (at as usize).saturating_sub(self.shift)
    }
}

impl HfBackend {
    /// The byte length a token stands for in normalized text, when certain
    /// (never for the unknown token, whose text is not its spelling).
    fn known_len(&self, id: u32) -> Option<usize> {
        if Some(id) == self.special_tokens.unk.as_ref().map(|t| t.id) {
            return None;
        }
        self.vocab
            .known_len
            .get(id as usize)
            .map(|&l| usize::from(l))
            .filter(|&l| l > 0)
    }

    /// Applies the vocabulary's fold fix-ups (see `Vocab::fold_fixups`) to
    /// `tokens[first..]`, as the sequential paths do.
    fn fix_folds_from(&self, tokens: &mut Vec<PipelineToken>, first: usize) {
        let fixups = &self.vocab.fold_fixups;
        if fixups.is_empty() || !tokens[first..].iter().any(|t| fixups.contains_key(&t.id())) {
            return;
        }
        let tail: Vec<PipelineToken> = tokens.drain(first..).collect();
        for t in tail {
            match fixups.get(&t.id()) {
                Some(ids) => tokens.extend(ids.iter().map(|&id| PipelineToken::from(id))),
                None => tokens.push(t),
            }
        }
    }

    /// The pipeline the chunk encoder reads its components from: the
    /// interim one while the model builds (invariant `interim-equals-built`). Both hold the same
    /// components, so an encode that sees the switch mid-way is unchanged.
    fn chunk_pipe(&self) -> Result<&tokenizers::pipeline::PipelineTokenizer> {
        match self.pipe.interim() {
            Some(interim) => Ok(&interim.pipe),
            None => self.pipe(),
        }
    }

    /// The model's ids for `spans` of `text`, appended to `out`: the
    /// interim engine's while the model builds, the model's after.
    fn tokenize_spans(
        &self,
        text: &str,
        spans: &[Span],
        model_scratch: &mut Option<PipelineModelScratch>,
        out: &mut Vec<PipelineToken>,
    ) -> Result<()> {
        if let Some(bpe) = &self.byte_bpe {
            let ranges = spans.iter().map(|s| {
                let r = s.range();
                (r.start, r.end)
            });
            bpe.encode_ranges(text.as_bytes(), ranges, out);
            return Ok(());
        }
        if let Some(model) = self.pipe.interim().and_then(|i| i.model.as_ref()) {
            model.tokenize_spans(text, spans, &self.vocab.by_token, out);
            return Ok(());
        }
        let model = self.pipe()?.get_model();
        let scratch = model_scratch.get_or_insert_with(|| model.init_scratch());
        let words = &self.vocab.suffix_words;
        if words.is_empty() {
            let first = out.len();
            model
                .tokenize_spans(text, spans, scratch, out)
                .map_err(err)?;
            return self.vocab.model_ids(out, first);
        }
        // One-character words of a suffix BPE never reach the model, whose
        // fold answers them wrongly (`Vocab::suffix_words`); the runs between
        // them go in one call each.
        let mut run = 0;
        for (i, span) in spans.iter().enumerate() {
            let mut chars = text.get(span.range()).unwrap_or_default().chars();
            let (Some(c), None) = (chars.next(), chars.next()) else {
                continue;
            };
            let Some(ids) = words.get(&c) else { continue };
            if run < i {
                model
                    .tokenize_spans(text, &spans[run..i], scratch, out)
                    .map_err(err)?;
            }
            out.extend(ids.iter().map(|&id| PipelineToken::from(id)));
            run = i + 1;
        }
        if run < spans.len() {
            model
                .tokenize_spans(text, &spans[run..], scratch, out)
                .map_err(err)?;
        }
        Ok(())
    }

    pub(super) fn encode_chunk_impl(
        &self,
        text: &str,
        request: &ChunkRequest,
        bounds: bool,
        as_text: AsText<'_>,
    ) -> Result<ChunkEncoding> {
        self.with_scratch(|scratch| self.encode_chunk_with(text, request, bounds, as_text, scratch))
    }

    /// Runs `f` with this thread's [`Scratch`] for this backend.
    fn with_scratch<T>(&self, f: impl FnOnce(&mut Scratch) -> T) -> T {
        let fresh = || Scratch {
            model: None,
            pre: PreTokenizerScratch::default(),
            spans: Vec::new(),
            cuts: CutScratch::default(),
            one: Vec::new(),
        };
        self.scratch.with(fresh, f)
    }

    /// The ids of `text` (no template tokens) appended to `tokens`: the
    /// chunk encoder's walk with no window, so a sequential encode and a
    /// chunk's share this thread's one word cache (invariant `pipeline-walk-equals-pipeline`).
    pub(super) fn plain_tokens(
        &self,
        text: &str,
        as_text: AsText<'_>,
        tokens: &mut Vec<PipelineToken>,
    ) -> Result<()> {
        let windows = Windows {
            head: 0,
            tail_from: text.len(),
            all: false,
            bounds: false,
            as_text,
        };
        let mut out = Out {
            tokens: std::mem::take(tokens),
            head: Side::default(),
            tail: Side::default(),
            offsets: Vec::new(),
        };
        let result = self.with_scratch(|scratch| self.walk_added(text, windows, scratch, &mut out));
        *tokens = out.tokens;
        result
    }

    fn encode_chunk_with(
        &self,
        text: &str,
        request: &ChunkRequest,
        bounds: bool,
        as_text: AsText<'_>,
        scratch: &mut Scratch,
    ) -> Result<ChunkEncoding> {
        let len = text.len();
        let windows = Windows {
            head: request.head.min(len),
            tail_from: len.saturating_sub(request.tail),
            all: request.all_offsets,
            bounds,
            as_text,
        };
        let mut out = Out {
            // The sequential encode's estimate (`HfBackend::encode`).
            tokens: Vec::with_capacity(len.max(request.reserve_bytes) / 4 + 8),
            head: Side::default(),
            tail: Side::default(),
            offsets: Vec::new(),
        };
        out.head.bounds.push(0);
        out.tail.bounds.push(len);
        self.walk_added(text, windows, scratch, &mut out)?;
        let ids: Vec<u32> = std::mem::take(&mut out.tokens)
            .into_iter()
            .map(u32::from)
            .collect();
        let n = ids.len();
        let offsets = if windows.all {
            if out.offsets.len() != n || out.offsets.iter().enumerate().any(|(k, &(i, _))| k != i) {
                return Err(err("chunk offsets incomplete"));
            }
            Some(out.offsets.iter().map(|&(_, s)| s).collect())
        } else {
            None
        };
        // A walk may cover the other window too (short chunks): share.
        if !out.head.failed {
            let (h, t) = (&out.head, &mut out.tail);
            t.known
                .extend(h.known.iter().filter(|&&(_, (_, e))| e > windows.tail_from));
            t.bounds
                .extend(h.bounds.iter().filter(|&&b| b >= windows.tail_from));
        }
        if !out.tail.failed {
            let (t, h) = (&out.tail, &mut out.head);
            h.known
                .extend(t.known.iter().filter(|&&(_, (s, _))| s < windows.head));
            h.bounds
                .extend(t.bounds.iter().filter(|&&b| b <= windows.head));
        }
        let mut boundaries = Vec::new();
        let head = finish_side(&mut out.head, n, true, &mut boundaries);
        let tail = finish_side(&mut out.tail, n, false, &mut boundaries);
        boundaries.dedup();
        if !boundaries.is_sorted() {
            boundaries.sort_unstable();
            boundaries.dedup();
        }
        Ok(ChunkEncoding {
            ids,
            head,
            tail_first: n - tail.len(),
            tail,
            boundaries,
            offsets,
        })
    }

    /// Text between raw added-token matches, and the matches, in order:
    /// the stages of `PipelineTokenizer::encode_into`.
    fn walk_added(
        &self,
        text: &str,
        windows: Windows<'_>,
        scratch: &mut Scratch,
        out: &mut Out,
    ) -> Result<()> {
        let len = text.len();
        let added = self.chunk_pipe()?.get_added_vocabulary();
        // `pos`: where the next text starts; `search`: where the next match
        // may (before `pos` after an `rstrip`, as in the reference).
        let (mut pos, mut search) = (0, 0);
        loop {
            let next = self.extract_added(added, text, search, pos, false, windows.as_text);
            let text_end = next.map_or(len, |m| m.start);
            if text_end > pos {
                let segment = text
                    .get(pos..text_end)
                    .ok_or_else(|| err("added-token match off a char boundary"))?;
                self.segment(segment, pos, windows, scratch, out)?;
            }
            let Some(Found {
                start: s,
                stop: e,
                resume,
                id,
            }) = next
            else {
                break;
            };
            if e <= s {
                // An empty span (an `lstrip` token inside the previous
                // one's `rstrip`): the reference drops it.
                (pos, search) = (e, resume);
                continue;
            }
            let i = out.tokens.len();
            if s < windows.head {
                out.head.known.push((i, (s, e)));
                out.head.bounds.extend([s, e]);
            }
            if e > windows.tail_from {
                out.tail.known.push((i, (s, e)));
                out.tail.bounds.extend([s, e]);
            }
            if windows.all {
                out.offsets.push((i, (s, e)));
            }
            out.tokens.push(PipelineToken::from(id));
            (pos, search) = (e, resume);
        }
        Ok(())
    }

    /// The next added-token match of a pass, on the crate's automaton when
    /// the load built one (invariant `crate-steps-equal-reference`), else `tokenizers`' matcher.
    fn extract_added(
        &self,
        added: &BucketAddedVocabulary,
        text: &str,
        search: usize,
        gap_from: usize,
        normalized: bool,
        as_text: AsText<'_>,
    ) -> Option<Found> {
        let mut search = search;
        loop {
            let found = match &self.added {
                Some(matcher) => matcher.next(text, search, gap_from, normalized, as_text.specials),
                None => added
                    .extract_next(text.as_bytes(), search, normalized, as_text.specials)
                    .map(|((start, stop), id)| Found {
                        start,
                        stop,
                        resume: stop,
                        id,
                    }),
            }?;
            // A marker kept as text is skipped as the reference skips a
            // special token under `encode_special_tokens`: the search goes
            // on from the end of its own text.
            if !as_text.marker(found.id) {
                return Some(found);
            }
            search = found.resume;
        }
    }

    /// One run of text between raw added-token matches, at chunk position `pos`.
    fn segment(
        &self,
        segment: &str,
        pos: usize,
        windows: Windows<'_>,
        scratch: &mut Scratch,
        out: &mut Out,
    ) -> Result<()> {
        let pipe = self.chunk_pipe()?;
        let normalized = match &self.bert {
            Some(bert) => bert.normalize(segment),
            None if self.nfc_only => Ok(super::nfc::normalize(segment)),
            None if let Some(replace) = &self.lone_replace => Ok(replace.normalize(segment)),
            None => normalize_chain(pipe.get_normalizers(), segment, pos),
        }
        .map_err(err)?;
        let norm: &str = normalized.as_ref();
        let end = pos + segment.len();
        let in_window = pos < windows.head || end > windows.tail_from;
        let normalizers = pipe.get_normalizers();
        let mut map = in_window.then(|| SegMap::new(normalizers, &self.pieces, segment, pos, norm));
        // The every-span map, for `all`.
        let full = (windows.all && norm != segment)
            .then(|| full_map(normalizers, &self.pieces, segment, norm));
        let to_full = |n: usize| {
            pos + full
                .as_ref()
                .map_or(n, |m| m.get(n).map_or(segment.len(), |&v| v as usize))
        };
        let added = pipe.get_added_vocabulary();
        let (mut npos, mut nsearch) = (0, 0);
        // Added tokens matched on normalized text, placed once the walks have
        // mapped the segment's ends.
        let mut norm_added: Vec<(usize, usize, usize)> = Vec::new();
        loop {
            let nnext = self.extract_added(added, norm, nsearch, npos, true, windows.as_text);
            let nend = nnext.map_or(norm.len(), |m| m.start);
            if nend > npos {
                let text = norm
                    .get(npos..nend)
                    .ok_or_else(|| err("normalized match off a char boundary"))?;
                // A `ByteLevel` pre-tokenizer's `add_prefix_space` puts a space
                // in front of each piece that does not start with one, as the
                // reference does per split (invariant `crate-steps-equal-reference`).
                let spaced;
                let (text, shift) = if self.prefix_space && !text.starts_with(' ') {
                    spaced = format!(" {text}");
                    (spaced.as_str(), 1)
                } else {
                    (text, 0)
                };
                let Ok(text_len) = u32::try_from(text.len()) else {
                    return Err(err("text piece too long to pre-tokenize"));
                };
                scratch.spans.clear();
                // The reference's Unicode classes where `bitcannon`'s differ
                // (invariant `unicode-classes-are-reference`).
                match self
                    .regex_split
                    .as_ref()
                    .filter(|r| r.needs(text))
                    .and_then(|r| r.split(text))
                {
                    Some(spans) => scratch.spans.extend(spans),
                    // Nothing the pre-tokenizer splits on is left (invariant
                    // `crate-steps-equal-reference`).
                    None if self.whole_pieces => {
                        scratch.spans.push(Span::new(0, text_len));
                    }
                    None => pipe
                        .get_pre_tokenizer()
                        .pre_tokenize(text, &mut scratch.pre, &mut scratch.spans)
                        .map_err(err)?,
                }
                let piece = Piece {
                    text,
                    base: npos,
                    shift,
                };
                let first = out.tokens.len();
                if windows.all {
                    self.place_all(&piece, &to_full, scratch, out)?;
                } else {
                    let model = &mut scratch.model;
                    let encode = |spans: &[Span], out: &mut Vec<PipelineToken>| {
                        self.tokenize_spans(text, spans, model, out)
                    };
                    let cuts = match &self.joins {
                        Some(joins) => Some(WordCuts::Joins(joins)),
                        None => self.vocab.cuts.as_ref().map(WordCuts::Cjk),
                    };
                    word_cuts::encode_spans(
                        cuts,
                        &mut scratch.cuts,
                        text,
                        &scratch.spans,
                        &mut out.tokens,
                        encode,
                    )?;
                    self.fix_folds_from(&mut out.tokens, first);
                }
                if let Some(map) = map.as_mut() {
                    let spans = std::mem::take(&mut scratch.spans);
                    let result = self.walk(&piece, &spans, first, windows, map, scratch, out);
                    scratch.spans = spans;
                    result?;
                }
            }
            let Some(Found {
                start: s,
                stop: e,
                resume,
                id,
            }) = nnext
            else {
                break;
            };
            if e <= s {
                (npos, nsearch) = (e, resume);
                continue;
            }
            let i = out.tokens.len();
            if map.is_some() {
                norm_added.push((i, s, e));
            }
            if windows.all {
                out.offsets.push((i, (to_full(s), to_full(e))));
            }
            out.tokens.push(PipelineToken::from(id));
            (npos, nsearch) = (e, resume);
        }
        if let Some(map) = map.as_mut() {
            for (i, s, e) in norm_added {
                if let (Some(a), Some(b)) = (map.peek(s, true), map.peek(e, true))
                    && a < windows.head
                {
                    out.head.known.push((i, (a, b)));
                    out.head.bounds.extend([a, b]);
                }
                if let (Some(a), Some(b)) = (map.peek(s, false), map.peek(e, false))
                    && b > windows.tail_from
                {
                    out.tail.known.push((i, (a, b)));
                    out.tail.bounds.extend([a, b]);
                }
            }
        }
        Ok(())
    }

    /// Every pre-token tokenized and placed on its own (spans go to
    /// `out.offsets`): token lengths when they add up to the pre-token.
    fn place_all(
        &self,
        piece: &Piece<'_>,
        to_full: &impl Fn(usize) -> usize,
        scratch: &mut Scratch,
        out: &mut Out,
    ) -> Result<()> {
        let spans = std::mem::take(&mut scratch.spans);
        for span in &spans {
            scratch.one.clear();
            self.tokenize_spans(
                piece.text,
                std::slice::from_ref(span),
                &mut scratch.model,
                &mut scratch.one,
            )?;
            self.fix_folds_from(&mut scratch.one, 0);
            let (s, e) = (piece.at(span.start), piece.at(span.end));
            // Exact lengths when they add up to the pre-token, else the whole
            // pre-token's span for each token.
            let lens: Option<Vec<usize>> = scratch
                .one
                .iter()
                .map(|t| {
                    self.vocab
                        .normalized_len
                        .get(t.id() as usize)
                        .copied()
                        .flatten()
                        .map(|l| l as usize)
                })
                .collect();
            let exact = lens.filter(|l| l.iter().sum::<usize>() == e - s);
            let mut p = s;
            for (k, t) in scratch.one.iter().enumerate() {
                let span = match &exact {
                    Some(lens) => {
                        let q = p + lens[k];
                        let span = (to_full(p), to_full(q));
                        p = q;
                        span
                    }
                    None => (to_full(s), to_full(e)),
                };
                out.offsets.push((out.tokens.len(), span));
                out.tokens.push(*t);
            }
        }
        scratch.spans = spans;
        Ok(())
    }

    /// Places the window tokens of one pre-tokenized piece whose tokens are
    /// `out.tokens[first..]`: forward through the head window, backward
    /// through the tail window.
    #[allow(clippy::too_many_arguments)]
    fn walk(
        &self,
        piece: &Piece<'_>,
        spans: &[Span],
        first: usize,
        windows: Windows<'_>,
        map: &mut SegMap<'_>,
        scratch: &mut Scratch,
        out: &mut Out,
    ) -> Result<()> {
        let last = out.tokens.len();
        let mut t = first;
        let mut k = 0;
        while k < spans.len() && !out.head.failed {
            let (ps, pe) = (piece.at(spans[k].start), piece.at(spans[k].end));
            let Some(a) = map.locate(ps, true) else {
                out.head.failed = true;
                break;
            };
            if a >= windows.head {
                break;
            }
            if windows.bounds {
                out.head.bounds.push(a);
            }
            match self.forward(
                piece,
                spans[k],
                (ps, pe),
                t,
                last,
                windows,
                map,
                scratch,
                out,
            )? {
                Flow::Done(count) => {
                    if windows.bounds {
                        match map.locate(pe, true) {
                            Some(b) => out.head.bounds.push(b),
                            None => out.head.failed = true,
                        }
                    }
                    t += count;
                    k += 1;
                }
                Flow::Stop => break,
            }
        }
        let floor_k = k;
        let mut t = last;
        let mut k = spans.len();
        while k > floor_k && !out.tail.failed {
            let span = spans[k - 1];
            let (ps, pe) = (piece.at(span.start), piece.at(span.end));
            let Some(b) = map.locate(pe, false) else {
                out.tail.failed = true;
                break;
            };
            if b <= windows.tail_from {
                break;
            }
            if windows.bounds {
                out.tail.bounds.push(b);
            }
            let flow =
                self.backward(piece, span, (ps, pe), first, t, windows, map, scratch, out)?;
            if windows.bounds {
                match map.locate(ps, false) {
                    Some(a) => out.tail.bounds.push(a),
                    None => out.tail.failed = true,
                }
            }
            match flow {
                Flow::Done(count) => {
                    t -= count;
                    k -= 1;
                }
                Flow::Stop => break,
            }
        }
        Ok(())
    }

    /// Re-tokenizes one pre-token alone and checks its tokens sit at `from`
    /// (`at(count)` gives it) in the chunk: how many tokens it has, when the
    /// lengths cannot tell. Their spans are then unknown (no cut next to them).
    fn count_alone(
        &self,
        piece: &Piece<'_>,
        span: Span,
        at: impl FnOnce(usize) -> Option<usize>,
        scratch: &mut Scratch,
        tokens: &[PipelineToken],
    ) -> Result<usize> {
        scratch.one.clear();
        self.tokenize_spans(
            piece.text,
            std::slice::from_ref(&span),
            &mut scratch.model,
            &mut scratch.one,
        )?;
        self.fix_folds_from(&mut scratch.one, 0);
        let count = scratch.one.len();
        let from = at(count).ok_or_else(|| err("pre-token tokens out of range"))?;
        if tokens.get(from..from + count) != Some(&scratch.one[..]) {
            return Err(err("pre-token tokens do not match the chunk's tokens"));
        }
        Ok(count)
    }

    /// Places the tokens of pre-token `[ps, pe)` starting at token `from`,
    /// while they start inside the head window.
    #[allow(clippy::too_many_arguments)]
    fn forward(
        &self,
        piece: &Piece<'_>,
        span: Span,
        (ps, pe): (usize, usize),
        from: usize,
        limit: usize,
        windows: Windows<'_>,
        map: &mut SegMap<'_>,
        scratch: &mut Scratch,
        out: &mut Out,
    ) -> Result<Flow> {
        let (mut p, mut i) = (ps, from);
        while p < pe {
            let len = out.tokens[..limit]
                .get(i)
                .and_then(|t| self.known_len(t.id()));
            let Some(l) = len.filter(|&l| p + l <= pe) else {
                // Lengths do not tell: count the tokens. A lone token covers
                // the pre-token; several keep unknown spans.
                let n = self.count_alone(piece, span, |_| Some(from), scratch, &out.tokens)?;
                if n == 1 && p == ps {
                    match (map.locate(ps, true), map.locate(pe, true)) {
                        (Some(a), Some(b)) if a < windows.head => {
                            out.head.known.push((from, (a, b)))
                        }
                        (Some(_), Some(_)) => return Ok(Flow::Stop),
                        _ => out.head.failed = true,
                    }
                }
                return Ok(Flow::Done(n));
            };
            let (Some(a), Some(b)) = (map.locate(p, true), map.locate(p + l, true)) else {
                out.head.failed = true;
                return Ok(Flow::Stop);
            };
            if a >= windows.head {
                return Ok(Flow::Stop);
            }
            out.head.known.push((i, (a, b)));
            p += l;
            i += 1;
        }
        Ok(Flow::Done(i - from))
    }

    /// Places the tokens of pre-token `[ps, pe)` ending before token `end`,
    /// backwards, while they end inside the tail window.
    #[allow(clippy::too_many_arguments)]
    fn backward(
        &self,
        piece: &Piece<'_>,
        span: Span,
        (ps, pe): (usize, usize),
        floor: usize,
        end: usize,
        windows: Windows<'_>,
        map: &mut SegMap<'_>,
        scratch: &mut Scratch,
        out: &mut Out,
    ) -> Result<Flow> {
        let (mut p, mut i) = (pe, end);
        while p > ps {
            let len = (i > floor)
                .then(|| out.tokens.get(i - 1))
                .flatten()
                .and_then(|t| self.known_len(t.id()));
            let Some(l) = len.filter(|&l| l <= p - ps) else {
                // Lengths do not tell: count the tokens. A lone token covers
                // the pre-token; several keep unknown spans.
                let n =
                    self.count_alone(piece, span, |c| end.checked_sub(c), scratch, &out.tokens)?;
                if n == 1 && p == pe {
                    match (map.locate(ps, false), map.locate(pe, false)) {
                        (Some(a), Some(b)) if b > windows.tail_from => {
                            out.tail.known.push((end - 1, (a, b)));
                        }
                        (Some(_), Some(_)) => return Ok(Flow::Stop),
                        _ => out.tail.failed = true,
                    }
                }
                return Ok(Flow::Done(n));
            };
            let (Some(a), Some(b)) = (map.locate(p - l, false), map.locate(p, false)) else {
                out.tail.failed = true;
                return Ok(Flow::Stop);
            };
            if b <= windows.tail_from {
                return Ok(Flow::Stop);
            }
            out.tail.known.push((i - 1, (a, b)));
            p -= l;
            i -= 1;
        }
        Ok(Flow::Done(end - i))
    }
}

/// Turns one window's findings into its span list (a prefix of the ids for
/// the head, a suffix for the tail) and adds its boundaries.
fn finish_side(
    side: &mut Side,
    n: usize,
    head: bool,
    boundaries: &mut Vec<usize>,
) -> Vec<(usize, usize)> {
    if side.failed {
        return Vec::new();
    }
    let known = &mut side.known;
    known.sort_by_key(|&(i, _)| i);
    known.dedup_by_key(|&mut (i, _)| i);
    // The tail walk records boundaries backwards: reversed, they keep the
    // caller's sort linear (a non-increasing run is a full sort otherwise).
    if side.bounds.windows(2).all(|w| w[0] >= w[1]) {
        side.bounds.reverse();
    }
    boundaries.extend_from_slice(&side.bounds);
    if head {
        let count = known
            .iter()
            .enumerate()
            .take_while(|&(k, &(i, _))| k == i)
            .count();
        known[..count].iter().map(|&(_, s)| s).collect()
    } else {
        let count = known
            .iter()
            .rev()
            .enumerate()
            .take_while(|&(k, &(i, _))| i + k + 1 == n)
            .count();
        known[known.len() - count..]
            .iter()
            .map(|&(_, s)| s)
            .collect()
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
