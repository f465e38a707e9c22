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

use tokenizers::pipeline::{
    Model, PipelineModelScratch, PipelinePatternMatcher, PipelineToken, PreTokenizer,
    PreTokenizerScratch, Span,
};
use tokenizers::vocab::bucket_added_vocabulary::AddedVocabulary as BucketAddedVocabulary;

use super::HfBackend;
use super::added::Found;
use super::nfc::normalize_chain;
use crate::backend::thread_scratch::ThreadScratch;
use crate::backend::word_cuts::{self, CutScratch, WordCuts};
use crate::contract::{ChunkEncoding, ChunkRequest};
use crate::error::{Error, Result};

mod place;
mod segmap;

pub(super) use segmap::PieceNorm;
use segmap::{SegMap, full_map};

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
    /// The piece is all ASCII: no step looks for other bytes in it.
    ascii: bool,
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
            bpe.encode_spans(text.as_bytes(), spans, out);
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
            tokens: Vec::with_capacity(len.max(request.reserve_bytes) / 3 + 8),
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
                // One pass says whether any step must look for other bytes.
                let ascii = text.is_ascii();
                self.pre_tokenize(pipe, text, ascii, scratch)?;
                let piece = Piece {
                    text,
                    base: npos,
                    shift,
                    ascii,
                };
                self.encode_piece(&piece, &to_full, map.as_mut(), windows, scratch, out)?;
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
            place_norm_added(map, norm_added, windows, out);
        }
        Ok(())
    }

    /// The pre-tokens of one piece of normalized text (`ascii`: all ASCII),
    /// into `scratch.spans`.
    fn pre_tokenize(
        &self,
        pipe: &tokenizers::pipeline::PipelineTokenizer,
        text: &str,
        ascii: bool,
        scratch: &mut Scratch,
    ) -> Result<()> {
        let Ok(text_len) = u32::try_from(text.len()) else {
            return Err(err("text piece too long to pre-tokenize"));
        };
        scratch.spans.clear();
        // The reference's Unicode classes where `bitcannon`'s differ
        // (invariant `unicode-classes-are-reference`).
        match self
            .regex_split
            .as_ref()
            .filter(|r| r.needs_in(text, ascii))
            .and_then(|r| r.split(text))
        {
            Some(spans) => scratch.spans.extend(spans),
            // Nothing the pre-tokenizer splits on is left (invariant
            // `crate-steps-equal-reference`).
            None if self.whole_pieces => {
                scratch.spans.push(Span::new(0, text_len));
            }
            None => {
                let pre = &mut scratch.pre;
                let mut native = |text: &str, spans: &mut Vec<Span>| {
                    pipe.get_pre_tokenizer()
                        .pre_tokenize(text, pre, spans)
                        .map_err(err)
                };
                match self.ascii {
                    Some(grammar) => crate::backend::ascii_split::split(
                        grammar,
                        text,
                        ascii,
                        &mut scratch.spans,
                        native,
                    )?,
                    None => native(text, &mut scratch.spans)?,
                }
            }
        }
        Ok(())
    }

    /// The model step over one piece's pre-tokens (`scratch.spans`), its
    /// tokens appended to `out.tokens`; then, in a window (`map`), its
    /// window tokens placed.
    fn encode_piece(
        &self,
        piece: &Piece<'_>,
        to_full: &impl Fn(usize) -> usize,
        map: Option<&mut SegMap<'_>>,
        windows: Windows<'_>,
        scratch: &mut Scratch,
        out: &mut Out,
    ) -> Result<()> {
        let text = piece.text;
        let first = out.tokens.len();
        if windows.all {
            self.place_all(piece, to_full, scratch, out)?;
        } else {
            let model = &mut scratch.model;
            let encode = |spans: &[Span], out: &mut Vec<PipelineToken>| {
                self.tokenize_spans(text, spans, model, out)
            };
            let cuts = match &self.joins {
                Some(joins) => Some(WordCuts::Joins(joins)),
                // CJK cuts start at CJK lead bytes, which ASCII has none of.
                None if piece.ascii => None,
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
        if let Some(map) = map {
            let spans = std::mem::take(&mut scratch.spans);
            let result = self.walk(piece, &spans, first, windows, map, scratch, out);
            scratch.spans = spans;
            result?;
        }
        Ok(())
    }
}

/// Places the added tokens matched on a segment's normalized text
/// (`(token index, start, end)`, normalized), once the walks have mapped the
/// segment's ends: in each window they fall in.
fn place_norm_added(
    map: &SegMap<'_>,
    norm_added: Vec<(usize, usize, usize)>,
    windows: Windows<'_>,
    out: &mut Out,
) {
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
