//! BPE segmentation with the exact merge order of sentencepiece's
//! `bpe_model.cc` (0.2.3).
//!
//! The normalized text is split into initial symbols: user-defined symbols
//! (longest prefix match, frozen: they never merge) and single characters.
//! Then, repeatedly, the adjacent pair whose concatenation is a mergeable
//! piece (NORMAL, USER_DEFINED or UNUSED) with the highest score is merged;
//! ties go to the leftmost pair. Scores are ordered the way sentencepiece's
//! `SymbolPairComparator` orders their IEEE bit patterns (so `-0.0 < +0.0`).
//! Final symbols that are not pieces, or are reserved pieces, become unknown;
//! UNUSED pieces are split back along the merge that made them
//! (`rev_merge`, last write wins, recursion depth 100).
//!
//! Speed-ups that keep the result identical:
//! - pair lookups use piece ids: a table maps (left id, right id) to the
//!   merged piece, built from every split of every mergeable piece;
//! - the text is cut at "safe" boundaries: between two characters that are
//!   not adjacent in any mergeable piece, and around frozen symbols. No merge
//!   can cross such a boundary, and the merge order inside one segment is the
//!   restriction of the global order, so segments are merged independently
//!   (short ones by direct scanning, long ones with a heap). This is only
//!   used when the model has no UNUSED pieces (their `rev_merge` table is
//!   global) and the normalized text is valid UTF-8; otherwise the whole text
//!   goes through the heap exactly as sentencepiece does;
//! - segment results are memoized per thread ([`super::cache`]);
//! - for the identity normalizer (no charsmap, no whitespace removal, spaces
//!   escaped, prefix not suffix) [`Bpe::encode_raw`] works on the input text
//!   directly: it cuts it before safe spaces into chunks, looks each chunk up
//!   by its raw bytes, and only builds normalized text for chunks it has not
//!   seen. Every memo key stands for the pieces of its bytes with `' '`
//!   read as U+2581: raw chunks, normalized text (which holds no `' '`),
//!   and segments whose leading U+2581 is written `' '` (so ` word` and
//!   the segment `▁word` of ` word,` share an entry) share one memo
//!   without ambiguity.

use std::cmp::Ordering;
use std::sync::atomic::AtomicU64;

use rustc_hash::{FxHashMap, FxHashSet};

use super::cache::CacheSet;
use super::model::{NO_ID, PieceSink, Vocab};
use super::normalizer::PrefixMatcher;
use super::utf8::{char_len_at, pack_char};

/// The identity-normalizer path: raw chunks looked up before normalizing.
mod raw;
/// Cutting text at safe boundaries, the segment memo, and merging.
mod segment;
/// The tables [`Bpe::new`] builds from the vocabulary.
mod table;

use table::PairTable;

/// Segments with more symbols than this use the heap instead of scanning.
const SMALL_SEGMENT: usize = 64;
/// `kMaxBpeResegmentDepth`.
const MAX_RESEGMENT_DEPTH: u32 = 100;
/// `pack_char` of U+2581.
const SPACE_CODE: u32 = 0x00E2_9681;

static NEXT_UID: AtomicU64 = AtomicU64::new(1);

type RevMerge = FxHashMap<u32, ((usize, u32), (usize, u32))>;

/// Maps an f32 score to a `u32` whose order is the order of sentencepiece's
/// integer-based `SymbolPairComparator`.
#[inline]
pub(crate) fn order_key(score: f32) -> u32 {
    let b = score.to_bits();
    if (b as i32) < 0 { !b } else { b | 0x8000_0000 }
}

#[derive(Debug, Clone, Copy)]
struct Sym {
    /// Offset in the buffer being segmented.
    start: usize,
    len: u32,
    /// Piece id, a virtual id (>= vocab size) for a character that is not a
    /// piece but occurs inside one, or `NO_ID`.
    id: u32,
    frozen: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    key: u32,
    left: u32,
    right: u32,
    size: u32,
    merged: u32,
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key
            .cmp(&other.key)
            .then_with(|| other.left.cmp(&self.left))
    }
}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Reusable buffers for [`Bpe`].
#[derive(Debug, Default)]
pub(crate) struct BpeScratch {
    seg: Vec<Sym>,
    cand: Vec<u64>,
    cand_merged: Vec<u32>,
    prev: Vec<u32>,
    next: Vec<u32>,
    heap: Vec<Entry>,
    out: Vec<(u32, u32)>,
    chunk: Vec<u8>,
    chunk_out: Vec<(u32, u32)>,
    ends: Vec<usize>,
    rev_merge: RevMerge,
    caches: CacheSet,
}

impl BpeScratch {
    /// Frees work buffers larger than `keep` bytes (the memo is kept).
    pub(crate) fn trim(&mut self, keep: usize) {
        if self.seg.capacity() * std::mem::size_of::<Sym>() > keep {
            self.seg = Vec::new();
        }
        if self.prev.capacity() * 4 > keep {
            self.prev = Vec::new();
            self.next = Vec::new();
        }
        if self.heap.capacity() * std::mem::size_of::<Entry>() > keep {
            self.heap = Vec::new();
        }
        if self.chunk.capacity() > keep {
            self.chunk = Vec::new();
        }
        if self.ends.capacity() * 8 > keep {
            self.ends = Vec::new();
        }
    }
}

/// The buffers segment merging needs (split from [`BpeScratch`] so the memo
/// can be borrowed alongside).
struct Work<'a> {
    seg: &'a mut Vec<Sym>,
    cand: &'a mut Vec<u64>,
    cand_merged: &'a mut Vec<u32>,
    prev: &'a mut Vec<u32>,
    next: &'a mut Vec<u32>,
    heap: &'a mut Vec<Entry>,
    out: &'a mut Vec<(u32, u32)>,
    /// The buffer being cut is a chunk the caller memoizes whole: a segment
    /// that spans all of it is not memoized again.
    whole_memoized: bool,
}

/// [`Bpe::merge_small`]'s buffers: packed candidates, the merged id of each
/// candidate, and the symbol links.
struct SmallWork<'a> {
    cand: &'a mut Vec<u64>,
    merged: &'a mut Vec<u32>,
    prev: &'a mut Vec<u32>,
    next: &'a mut Vec<u32>,
}

/// Records one final piece for the memo as (id, byte length). With byte
/// fallback an unknown piece is stored already expanded into its byte
/// pieces, one byte each: that is exactly what every sink makes of it, and
/// with byte fallback on no later piece depends on it (unknown runs are only
/// merged without byte fallback). Returns false for an unknown piece that
/// stays unknown (the entry then needs the piece's bytes when replayed).
#[inline]
fn record(
    out: &mut Vec<(u32, u32)>,
    id: u32,
    bytes: &[u8],
    unk: u32,
    fallback: Option<&[u32; 256]>,
) -> bool {
    if id != unk && id != NO_ID {
        out.push((id, bytes.len() as u32));
        return true;
    }
    match fallback {
        Some(t) => {
            out.extend(bytes.iter().map(|&b| (t[usize::from(b)], 1)));
            true
        }
        None => {
            out.push((id, bytes.len() as u32));
            false
        }
    }
}

/// Forwards pieces to a sink and records them for the memo.
struct Recorder<'a, S> {
    inner: &'a mut S,
    out: &'a mut Vec<(u32, u32)>,
    unk: u32,
    fallback: Option<&'a [u32; 256]>,
    plain: bool,
}

impl<S: PieceSink> PieceSink for Recorder<'_, S> {
    #[inline]
    fn piece(&mut self, start: usize, bytes: &[u8], id: u32) {
        self.plain &= record(self.out, id, bytes, self.unk, self.fallback);
        self.inner.piece(start, bytes, id);
    }
    #[inline]
    fn plain(&mut self, start: usize, ids: &[u32], lens: &[u8]) {
        self.out
            .extend(ids.iter().zip(lens).map(|(&i, &l)| (i, u32::from(l))));
        self.inner.plain(start, ids, lens);
    }
    #[inline]
    fn plain_one(&mut self, start: usize, len: usize, id: u32) {
        self.out.push((id, len as u32));
        self.inner.plain_one(start, len, id);
    }
    #[inline]
    fn plain_pairs(&mut self, start: usize, pieces: &[(u32, u32)]) {
        self.out.extend_from_slice(pieces);
        self.inner.plain_pairs(start, pieces);
    }
}

/// Precomputed BPE tables.
#[derive(Debug, Clone)]
pub(crate) struct Bpe {
    ascii: [u32; 128],
    chars: FxHashMap<u32, u32>,
    /// (left id, right id) -> (order key of the merged piece, its id).
    merges: PairTable,
    /// `ascii_adj[a]` bit `b`: ASCII chars a, b are adjacent in some mergeable piece.
    ascii_adj: Box<[u128; 128]>,
    /// Same for pairs involving non-ASCII characters (packed keys).
    adj: FxHashSet<u64>,
    /// ASCII `c` such that `c` + U+2581 is adjacent in some mergeable piece.
    before_space: u128,
    /// ASCII `c` such that U+2581 + `c` is adjacent in some mergeable piece.
    after_space: u128,
    /// U+2581 U+2581 is adjacent in some mergeable piece.
    space_space: bool,
    /// The model has UNUSED pieces: use the exact global algorithm.
    has_unused: bool,
    vocab_len: u32,
    /// Identifies the model's memo in the per-thread cache set.
    uid: u64,
    /// Bytes that start some user-defined symbol.
    ud_lead: [bool; 256],
    /// No user-defined symbol contains U+2581 after its first byte (so none
    /// can span a cut made before a space).
    ud_space_free: bool,
    /// Byte-piece ids when byte fallback is on.
    fallback: Option<Box<[u32; 256]>>,
    /// Symbol id of every BMP character (by code point), like `ascii`/`chars`.
    bmp_id: Vec<u32>,
    /// Per BMP code point: `RIGHT` if it is followed by some character inside
    /// a mergeable piece, `LEFT` if it is preceded by one.
    bmp_flags: Vec<u8>,
}

const RIGHT: u8 = 1;
const LEFT: u8 = 2;
const BMP: usize = 0x1_0000;

/// The code point of a valid 1–3 byte UTF-8 character (a BMP character).
#[inline]
fn bmp_cp(c: &[u8]) -> Option<usize> {
    match *c {
        [b0] if b0 < 0x80 => Some(usize::from(b0)),
        [b0 @ 0xC2..=0xDF, b1] if b1 & 0xC0 == 0x80 => {
            Some((usize::from(b0 & 0x1F) << 6) | usize::from(b1 & 0x3F))
        }
        [b0 @ 0xE0..=0xEF, b1, b2] if b1 & 0xC0 == 0x80 && b2 & 0xC0 == 0x80 => {
            let cp = (usize::from(b0 & 0x0F) << 12)
                | (usize::from(b1 & 0x3F) << 6)
                | usize::from(b2 & 0x3F);
            (cp >= 0x800 && !(0xD800..0xE000).contains(&cp)).then_some(cp)
        }
        _ => None,
    }
}

impl Bpe {
    #[inline]
    fn char_id(&self, c: &[u8]) -> u32 {
        if c.len() == 1 && c[0] < 128 {
            return self.ascii[usize::from(c[0])];
        }
        if let Some(&id) = bmp_cp(c).and_then(|cp| self.bmp_id.get(cp)) {
            return id;
        }
        self.chars.get(&pack_char(c)).copied().unwrap_or(NO_ID)
    }

    /// [`adjacent`](Self::adjacent) with a cheap pre-filter on BMP code
    /// points (`usize::MAX` when unknown): characters that are never
    /// followed / preceded by anything inside a piece cannot be adjacent.
    #[inline(always)]
    fn adjacent_cp(&self, a: u32, a_cp: usize, b: u32, b_cp: usize) -> bool {
        if let (Some(&fa), Some(&fb)) = (self.bmp_flags.get(a_cp), self.bmp_flags.get(b_cp))
            && (fa & RIGHT == 0 || fb & LEFT == 0)
        {
            return false;
        }
        self.adjacent(a, b)
    }

    /// Whether the characters with packed codes `a` and `b` are adjacent in
    /// some mergeable piece (if not, no merge can ever join them).
    #[inline(always)]
    fn adjacent(&self, a: u32, b: u32) -> bool {
        if a < 128 {
            if b < 128 {
                return (self.ascii_adj[a as usize] >> b) & 1 != 0;
            }
            if b == SPACE_CODE {
                return (self.before_space >> a) & 1 != 0;
            }
        } else if a == SPACE_CODE {
            if b < 128 {
                return (self.after_space >> b) & 1 != 0;
            }
            if b == SPACE_CODE {
                return self.space_space;
            }
        }
        self.adj.contains(&((u64::from(a) << 32) | u64::from(b)))
    }

    /// The merge candidate for two adjacent symbols: (order key, merged id).
    #[inline]
    fn pair(&self, a: &Sym, b: &Sym) -> Option<(u32, u32)> {
        if a.frozen || b.frozen || a.id == NO_ID || b.id == NO_ID {
            return None;
        }
        self.merges.get((u64::from(a.id) << 32) | u64::from(b.id))
    }

    /// Whether [`encode_raw`](Self::encode_raw) may be used (the normalizer
    /// conditions are checked by the caller).
    pub(crate) fn raw_path_ok(&self) -> bool {
        !self.has_unused && self.ud_space_free
    }

    /// Encodes normalized text, pushing every final symbol to `sink`; `id` is
    /// `vocab.unk_id_raw()` for symbols that are not (mergeable) pieces.
    pub(crate) fn encode<S: PieceSink>(
        &self,
        vocab: &Vocab,
        matcher: &PrefixMatcher,
        normalized: &[u8],
        valid_utf8: bool,
        scratch: &mut BpeScratch,
        sink: &mut S,
    ) {
        if normalized.is_empty() {
            return;
        }
        if !valid_utf8 || self.has_unused {
            self.encode_global(vocab, matcher, normalized, scratch, sink);
            return;
        }
        let cache = scratch.caches.for_model(self.uid);
        let mut work = Work {
            seg: &mut scratch.seg,
            cand: &mut scratch.cand,
            cand_merged: &mut scratch.cand_merged,
            prev: &mut scratch.prev,
            next: &mut scratch.next,
            heap: &mut scratch.heap,
            out: &mut scratch.out,
            whole_memoized: false,
        };
        self.scan_segments(vocab, matcher, normalized, 0, Some(cache), &mut work, sink);
    }

    /// sentencepiece's algorithm on the whole text at once (also the
    /// reference the fast paths are tested against).
    pub(super) fn encode_global<S: PieceSink>(
        &self,
        vocab: &Vocab,
        matcher: &PrefixMatcher,
        normalized: &[u8],
        scratch: &mut BpeScratch,
        sink: &mut S,
    ) {
        let use_matcher = !matcher.is_empty();
        let seg = &mut scratch.seg;
        seg.clear();
        let mut pos = 0usize;
        while pos < normalized.len() {
            let rest = &normalized[pos..];
            let sym = match use_matcher.then(|| matcher.find(rest)).flatten() {
                Some((len, id)) => Sym {
                    start: pos,
                    len: len as u32,
                    id,
                    frozen: true,
                },
                None => {
                    let l = char_len_at(rest);
                    Sym {
                        start: pos,
                        len: l as u32,
                        id: self.char_id(&rest[..l]),
                        frozen: false,
                    }
                }
            };
            pos += sym.len as usize;
            seg.push(sym);
        }
        let rev = if self.has_unused {
            scratch.rev_merge.clear();
            Some(&mut scratch.rev_merge)
        } else {
            None
        };
        self.merge_heap(
            vocab,
            normalized,
            0,
            seg,
            &mut scratch.prev,
            &mut scratch.next,
            &mut scratch.heap,
            rev,
            sink,
        );
        seg.clear();
    }

    /// The id sentencepiece emits for a final symbol (no UNUSED pieces).
    #[inline]
    fn final_id(&self, vocab: &Vocab, s: &Sym) -> u32 {
        if s.id < self.vocab_len && vocab.kind(s.id).is_normal_like() {
            s.id
        } else {
            vocab.unk_id_raw()
        }
    }

    #[inline]
    fn emit<S: PieceSink>(&self, vocab: &Vocab, buf: &[u8], base: usize, s: &Sym, sink: &mut S) {
        let end = s.start + s.len as usize;
        sink.piece(
            base + s.start,
            buf.get(s.start..end).unwrap_or_default(),
            self.final_id(vocab, s),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::order_key;

    #[test]
    fn order_key_matches_comparator() {
        let vals = [
            -1e9f32,
            -3.0,
            -2.0,
            -0.5,
            -0.0,
            0.0,
            0.5,
            2.0,
            f32::INFINITY,
        ];
        for w in vals.windows(2) {
            assert!(order_key(w[0]) < order_key(w[1]), "{} {}", w[0], w[1]);
        }
    }
}
