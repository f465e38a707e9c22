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
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

use rustc_hash::{FxHashMap, FxHashSet};

use super::cache::{CacheSet, INLINE_KEY, MAX_CHUNK_KEY, MAX_KEY, Probe, WordCache, key128};
use super::model::{NO_ID, PieceSink, Vocab};
use super::normalizer::PrefixMatcher;
use super::utf8::{SPACE_MARK, char_len_at, one_char_len, pack_char};

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

/// One entry of [`PairTable`]: `pair` is `left << 32 | right`, or
/// [`EMPTY_PAIR`].
#[derive(Debug, Clone, Copy)]
#[repr(C)]
struct PairSlot {
    pair: u64,
    key: u32,
    merged: u32,
}

/// A cache line of [`PairTable`] slots.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct PairLine([PairSlot; PAIR_WAYS]);

const PAIR_WAYS: usize = 4;
/// (NO_ID, NO_ID): never a pair of two symbols that merge.
const EMPTY_PAIR: u64 = u64::MAX;

/// The merge table, (left id, right id) -> (order key, merged id), as
/// open addressing over cache lines of four slots, at most half full. A
/// fresh word's merge waits on these lookups (Mistral's table is 59k
/// pairs, 2 MiB: mostly L2 misses); a lookup here reads one line, usually,
/// where a `HashMap<u64, u32>` read a control group, a bucket and then the
/// merged piece's score key from a third array (invariant `sentencepiece-fast-paths-exact`).
#[derive(Debug, Clone, Default)]
struct PairTable {
    lines: Vec<PairLine>,
    /// `64 - log2(lines.len())`: the line is the hash's top bits.
    shift: u32,
}

impl PairTable {
    /// The table of `merges` (pair, merged id), each entry with
    /// `key(merged)`; of two entries for one pair the later wins.
    fn new(merges: &[(u64, u32)], key: impl Fn(u32) -> u32) -> Self {
        let want = (merges.len() * 2).div_ceil(PAIR_WAYS).next_power_of_two();
        let empty = PairSlot {
            pair: EMPTY_PAIR,
            key: 0,
            merged: NO_ID,
        };
        let mut t = Self {
            lines: vec![PairLine([empty; PAIR_WAYS]); want],
            shift: 64 - want.trailing_zeros(),
        };
        let mask = want - 1;
        for &(pair, merged) in merges {
            let mut at = t.line_of(pair);
            'place: for _ in 0..want {
                if let Some(line) = t.lines.get_mut(at) {
                    for s in &mut line.0 {
                        if s.pair == EMPTY_PAIR || s.pair == pair {
                            *s = PairSlot {
                                pair,
                                key: key(merged),
                                merged,
                            };
                            break 'place;
                        }
                    }
                }
                at = (at + 1) & mask;
            }
        }
        t
    }

    #[inline(always)]
    fn line_of(&self, pair: u64) -> usize {
        let h = (pair ^ (pair >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        // A shift of 64 (one line) would overflow: `checked_shr` gives 0.
        h.checked_shr(self.shift).unwrap_or(0) as usize
    }

    /// (order key, merged id) of a pair, if it merges. Slots fill in probe
    /// order and are never removed, so an empty slot ends the search.
    #[inline(always)]
    fn get(&self, pair: u64) -> Option<(u32, u32)> {
        let mask = self.lines.len().wrapping_sub(1);
        let mut at = self.line_of(pair);
        for _ in 0..self.lines.len() {
            let line = self.lines.get(at)?;
            for s in &line.0 {
                if s.pair == pair {
                    return Some((s.key, s.merged));
                }
                if s.pair == EMPTY_PAIR {
                    return None;
                }
            }
            at = (at + 1) & mask;
        }
        None
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
    pub(crate) fn new(vocab: &Vocab, fallback: Option<Box<[u32; 256]>>) -> Self {
        let n = vocab.len();
        let mut ascii = [NO_ID; 128];
        let mut chars: FxHashMap<u32, u32> = FxHashMap::default();
        let mut has_unused = false;
        // Single-character pieces (any type: sentencepiece's BPE puts every
        // piece in one map).
        for id in 0..n as u32 {
            if !vocab.in_map(id) {
                continue;
            }
            let p = vocab.piece(id);
            if vocab.kind(id) == super::PieceType::Unused {
                has_unused = true;
            }
            if !p.is_empty() && char_len_at(p) == p.len() {
                if p.len() == 1 && p[0] < 128 {
                    ascii[usize::from(p[0])] = id;
                } else {
                    chars.insert(pack_char(p), id);
                }
            }
        }
        // Characters that occur inside mergeable pieces but are not pieces
        // themselves get virtual ids so that pair lookups stay id-based.
        let mut next_virtual = n as u32;
        let mut ascii_adj = Box::new([0u128; 128]);
        let mut adj: FxHashSet<u64> = FxHashSet::default();
        for id in 0..n as u32 {
            if !vocab.mergeable(id) {
                continue;
            }
            let p = vocab.piece(id);
            let mut i = 0;
            let mut prev: Option<&[u8]> = None;
            while i < p.len() {
                let l = char_len_at(&p[i..]);
                let c = &p[i..i + l];
                let is_ascii = l == 1 && c[0] < 128;
                if is_ascii {
                    if ascii[usize::from(c[0])] == NO_ID {
                        ascii[usize::from(c[0])] = next_virtual;
                        next_virtual += 1;
                    }
                } else {
                    chars.entry(pack_char(c)).or_insert_with(|| {
                        next_virtual += 1;
                        next_virtual - 1
                    });
                }
                if let Some(pc) = prev {
                    if pc.len() == 1 && pc[0] < 128 && is_ascii {
                        ascii_adj[usize::from(pc[0])] |= 1u128 << c[0];
                    } else {
                        adj.insert((u64::from(pack_char(pc)) << 32) | u64::from(pack_char(c)));
                    }
                }
                prev = Some(c);
                i += l;
            }
        }
        let mut bpe = Self {
            ascii,
            chars,
            merges: PairTable::default(),
            ascii_adj,
            adj,
            before_space: 0,
            after_space: 0,
            space_space: false,
            has_unused,
            vocab_len: n as u32,
            uid: NEXT_UID.fetch_add(1, AtomicOrdering::Relaxed),
            ud_lead: [false; 256],
            ud_space_free: true,
            fallback,
            bmp_id: Vec::new(),
            bmp_flags: vec![0; BMP],
        };
        let mut bmp_id = vec![NO_ID; BMP];
        for (cp, slot) in bmp_id.iter_mut().enumerate().take(128) {
            *slot = bpe.ascii[cp];
        }
        for (&code, &id) in &bpe.chars {
            let bytes = code.to_be_bytes();
            let start = bytes.iter().position(|&b| b != 0).unwrap_or(3);
            if let Some(cp) = bmp_cp(&bytes[start..]) {
                if let Some(slot) = bmp_id.get_mut(cp) {
                    *slot = id;
                }
            }
        }
        bpe.bmp_id = bmp_id;
        for id in 0..n as u32 {
            if !vocab.mergeable(id) {
                continue;
            }
            let p = vocab.piece(id);
            let mut i = 0;
            let mut prev: Option<usize> = None;
            while i < p.len() {
                let l = char_len_at(&p[i..]);
                let cp = bmp_cp(&p[i..i + l]);
                if let (Some(a), Some(b)) = (prev, cp) {
                    bpe.bmp_flags[a] |= RIGHT;
                    bpe.bmp_flags[b] |= LEFT;
                }
                prev = cp;
                i += l;
            }
        }
        for id in 0..n as u32 {
            if vocab.in_map(id) && vocab.kind(id) == super::PieceType::UserDefined {
                let p = vocab.piece(id);
                if let Some(&b) = p.first() {
                    bpe.ud_lead[usize::from(b)] = true;
                }
                if p.len() > 1 && p[1..].windows(3).any(|w| w == SPACE_MARK) {
                    bpe.ud_space_free = false;
                }
            }
        }
        let sp = u64::from(SPACE_CODE);
        for c in 0u8..128 {
            if bpe.adj.contains(&((u64::from(c) << 32) | sp)) {
                bpe.before_space |= 1u128 << c;
            }
            if bpe.adj.contains(&((sp << 32) | u64::from(c))) {
                bpe.after_space |= 1u128 << c;
            }
        }
        bpe.space_space = bpe.adj.contains(&((sp << 32) | sp));
        // Pair table: every split of every mergeable piece into two halves
        // that can be symbols (a single character, or a mergeable piece).
        let mut merges: Vec<(u64, u32)> = Vec::new();
        for id in 0..n as u32 {
            if !vocab.mergeable(id) {
                continue;
            }
            let p = vocab.piece(id);
            let mut k = char_len_at(p);
            while k < p.len() {
                // The right half is looked up only when the left one is a
                // symbol.
                if let Some(l) = bpe.half_id(vocab, &p[..k])
                    && let Some(r) = bpe.half_id(vocab, &p[k..])
                {
                    merges.push(((u64::from(l) << 32) | u64::from(r), id));
                }
                k += char_len_at(&p[k..]);
            }
        }
        bpe.merges = PairTable::new(&merges, |id| order_key(vocab.score(id)));
        bpe
    }

    fn half_id(&self, vocab: &Vocab, h: &[u8]) -> Option<u32> {
        if char_len_at(h) == h.len() {
            let id = self.char_id(h);
            return (id != NO_ID).then_some(id);
        }
        vocab
            .lookup_no_reserved(h)
            .filter(|&id| vocab.mergeable(id))
    }

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
        if let (Some(&fa), Some(&fb)) = (self.bmp_flags.get(a_cp), self.bmp_flags.get(b_cp)) {
            if fa & RIGHT == 0 || fb & LEFT == 0 {
                return false;
            }
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

    /// Encodes `text` as the identity normalizer would present it
    /// (`[U+2581 if dummy] + text` with every `' '` as U+2581) without
    /// building the normalized string, except for chunks not yet memoized.
    /// Requires [`raw_path_ok`](Self::raw_path_ok).
    pub(crate) fn encode_raw<S: PieceSink>(
        &self,
        vocab: &Vocab,
        matcher: &PrefixMatcher,
        text: &[u8],
        dummy: bool,
        scratch: &mut BpeScratch,
        sink: &mut S,
    ) {
        let n = text.len();
        if n == 0 && !dummy {
            return;
        }
        let BpeScratch {
            seg,
            cand,
            cand_merged,
            prev,
            next,
            heap,
            out,
            chunk,
            chunk_out,
            ends,
            caches,
            ..
        } = scratch;
        let cache = caches.for_model(self.uid);
        let mut work = Work {
            seg,
            cand,
            cand_merged,
            prev,
            next,
            heap,
            out,
            whole_memoized: false,
        };
        // Pass 1: the chunk ends (cuts before spaces that are safe
        // boundaries). Pass 2: look the chunks up, prefetching the memo sets
        // of the chunk a few places ahead so memory latency overlaps; the
        // sets are computed once, for the prefetch, and kept for the lookup.
        ends.clear();
        let mut cs = 0usize;
        for_each_space(text, |q| {
            if q > cs && !self.adjacent(prev_code(text, q), SPACE_CODE) {
                ends.push(q);
                cs = q;
            }
        });
        ends.push(n);
        const AHEAD: usize = 8;
        let mut ring = [Probe::default(); AHEAD];
        for (i, slot) in ring.iter_mut().enumerate().take(ends.len()) {
            *slot = probe_chunk(cache, text, ends, i);
        }
        let mut norm_pos = 0usize;
        let mut cs = 0usize;
        for i in 0..ends.len() {
            let p = ring[i % AHEAD];
            if i + AHEAD < ends.len() {
                ring[i % AHEAD] = probe_chunk(cache, text, ends, i + AHEAD);
            }
            let ce = ends[i];
            self.raw_chunk(
                vocab,
                matcher,
                text,
                (cs, ce),
                &p,
                dummy,
                cache,
                &mut work,
                chunk,
                chunk_out,
                &mut norm_pos,
                sink,
            );
            cs = ce;
        }
    }

    /// One chunk `text[cs..ce]` of [`encode_raw`](Self::encode_raw). The
    /// memo key is the raw chunk, or for the first chunk (which carries the
    /// dummy prefix) its normalized form.
    #[allow(clippy::too_many_arguments)]
    fn raw_chunk<S: PieceSink>(
        &self,
        vocab: &Vocab,
        matcher: &PrefixMatcher,
        text: &[u8],
        (cs, ce): (usize, usize),
        probe: &Probe,
        dummy: bool,
        cache: &mut WordCache,
        work: &mut Work<'_>,
        chunk: &mut Vec<u8>,
        chunk_out: &mut Vec<(u32, u32)>,
        norm_pos: &mut usize,
        sink: &mut S,
    ) {
        let raw = text.get(cs..ce).unwrap_or_default();
        let with_dummy = cs == 0 && dummy;
        let build = |chunk: &mut Vec<u8>| {
            chunk.clear();
            if with_dummy {
                chunk.extend_from_slice(SPACE_MARK);
            }
            let mut rest = raw;
            while let Some(q) = memchr::memchr(b' ', rest) {
                chunk.extend_from_slice(&rest[..q]);
                chunk.extend_from_slice(SPACE_MARK);
                rest = &rest[q + 1..];
            }
            chunk.extend_from_slice(rest);
        };
        let mut built = false;
        if with_dummy {
            build(chunk);
            built = true;
        }
        let key: &[u8] = if with_dummy { chunk } else { raw };
        let memo = !key.is_empty() && key.len() <= MAX_CHUNK_KEY;
        if memo {
            let hit = if with_dummy {
                cache.get_inline(key128(key, 0, key.len()), key.len())
            } else {
                cache.get_probed(probe)
            };
            if let Some(hit) = hit {
                sink.plain(*norm_pos, hit.ids(), hit.lens());
                *norm_pos += hit.lens().iter().map(|&l| usize::from(l)).sum::<usize>();
                return;
            }
            if let Some(vals) = cache.get_arena(key) {
                let unk = vocab.unk_id_raw();
                // One pass with no early exit (it vectorizes): are all
                // pieces ordinary, and how many bytes do they cover.
                let (odd, len) = vals.iter().fold((false, 0usize), |(odd, len), &(id, l)| {
                    (odd | (id == unk) | (id == NO_ID), len + l as usize)
                });
                if !odd {
                    sink.plain_pairs(*norm_pos, vals);
                    *norm_pos += len;
                    return;
                }
                // Unknown pieces need their normalized bytes.
                let vals = vals.to_vec();
                if !built {
                    build(chunk);
                }
                let mut local = 0usize;
                for (id, len) in vals {
                    let len = len as usize;
                    sink.piece(
                        *norm_pos,
                        chunk.get(local..local + len).unwrap_or_default(),
                        id,
                    );
                    local += len;
                    *norm_pos += len;
                }
                return;
            }
        }
        if !built {
            build(chunk);
        }
        if chunk.is_empty() {
            return;
        }
        chunk_out.clear();
        let mut rec = Recorder {
            inner: sink,
            out: chunk_out,
            unk: vocab.unk_id_raw(),
            fallback: self.fallback.as_deref(),
            plain: true,
        };
        // Every chunk's segments are memoized as well as the chunk (invariant
        // `cache-transparent`): a chunk seen for the first time (` Elizabeth,`) mostly
        // consists of segments seen before (`▁Elizabeth`, `,`).
        work.whole_memoized = memo;
        self.scan_segments(
            vocab,
            matcher,
            chunk,
            *norm_pos,
            Some(&mut *cache),
            work,
            &mut rec,
        );
        work.whole_memoized = false;
        let plain = rec.plain;
        *norm_pos += chunk.len();
        if memo {
            let key: &[u8] = if with_dummy { chunk } else { raw };
            cache.insert(key, chunk_out, plain);
        }
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

    /// Cuts `buf` (normalized text starting at normalized offset `base`) at
    /// safe boundaries and frozen symbols, and merges each segment.
    #[allow(clippy::too_many_arguments)]
    fn scan_segments<S: PieceSink>(
        &self,
        vocab: &Vocab,
        matcher: &PrefixMatcher,
        buf: &[u8],
        base: usize,
        mut cache: Option<&mut WordCache>,
        work: &mut Work<'_>,
        sink: &mut S,
    ) {
        let use_matcher = !matcher.is_empty();
        let n = buf.len();
        let mut seg_start = 0usize;
        let mut pos = 0usize;
        let mut prev_code = u32::MAX;
        let mut prev_cp = usize::MAX;
        // Byte length of the previous character; 0 right after a frozen
        // symbol (then `pos == seg_start`) or at the start.
        let mut prev_len = 0usize;
        while pos < n {
            let b = buf[pos];
            if use_matcher && self.ud_lead[usize::from(b)] {
                if let Some((len, id)) = matcher.find(&buf[pos..]) {
                    self.flush(
                        vocab,
                        buf,
                        base,
                        seg_start,
                        pos,
                        cache.as_deref_mut(),
                        work,
                        sink,
                    );
                    let frozen = Sym {
                        start: pos,
                        len: len as u32,
                        id,
                        frozen: true,
                    };
                    self.emit(vocab, buf, base, &frozen, sink);
                    pos += len;
                    seg_start = pos;
                    prev_len = 0;
                    continue;
                }
            }
            let (l, code, cp) = if b < 0x80 {
                (1, u32::from(b), usize::from(b))
            } else {
                let l = one_char_len(b).min(n - pos);
                let c = &buf[pos..pos + l];
                (l, pack_char(c), bmp_cp(c).unwrap_or(usize::MAX))
            };
            if pos != seg_start && !self.adjacent_cp(prev_code, prev_cp, code, cp) {
                let last = (prev_len, prev_cp);
                let seg = (seg_start, pos);
                self.close(
                    vocab,
                    buf,
                    base,
                    seg,
                    last,
                    cache.as_deref_mut(),
                    work,
                    sink,
                );
                seg_start = pos;
            }
            prev_code = code;
            prev_cp = cp;
            prev_len = l;
            pos += l;
        }
        let last = (prev_len, prev_cp);
        self.close(vocab, buf, base, (seg_start, n), last, cache, work, sink);
    }

    /// Ends the segment `buf[start..end]` whose last character has byte
    /// length and BMP code point `last` (length 0: unknown): a segment of
    /// that one character goes out directly, any other through
    /// [`flush`](Self::flush).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn close<S: PieceSink>(
        &self,
        vocab: &Vocab,
        buf: &[u8],
        base: usize,
        (start, end): (usize, usize),
        (last_len, last_cp): (usize, usize),
        cache: Option<&mut WordCache>,
        work: &mut Work<'_>,
        sink: &mut S,
    ) {
        if last_len != 0 && end.saturating_sub(start) == last_len {
            self.emit_char(vocab, buf, base, start, last_len, last_cp, sink);
        } else {
            self.flush(vocab, buf, base, start, end, cache, work, sink);
        }
    }

    /// Emits the one-character segment `buf[start..start + len]` (BMP code
    /// point `cp`, or `usize::MAX`): nothing merges, so its symbol is final.
    /// An ordinary piece goes out as `plain_one`, as a memo hit would.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn emit_char<S: PieceSink>(
        &self,
        vocab: &Vocab,
        buf: &[u8],
        base: usize,
        start: usize,
        len: usize,
        cp: usize,
        sink: &mut S,
    ) {
        let c = buf.get(start..start + len).unwrap_or_default();
        let id = match self.bmp_id.get(cp) {
            Some(&id) => id,
            None => self.char_id(c),
        };
        let sym = Sym {
            start,
            len: len as u32,
            id,
            frozen: false,
        };
        let f = self.final_id(vocab, &sym);
        if f != vocab.unk_id_raw() && f != NO_ID {
            sink.plain_one(base + start, len, f);
        } else {
            sink.piece(base + start, c, f);
        }
    }

    /// Merges and emits the segment `buf[start..end]` (no frozen symbols
    /// inside), through the memo when it is short.
    #[allow(clippy::too_many_arguments)]
    fn flush<S: PieceSink>(
        &self,
        vocab: &Vocab,
        buf: &[u8],
        base: usize,
        start: usize,
        end: usize,
        cache: Option<&mut WordCache>,
        w: &mut Work<'_>,
        sink: &mut S,
    ) {
        if start >= end {
            return;
        }
        let key = &buf[start..end];
        if char_len_at(key) == key.len() {
            // One character: nothing to merge.
            let sym = Sym {
                start,
                len: key.len() as u32,
                id: self.char_id(key),
                frozen: false,
            };
            self.emit(vocab, buf, base, &sym, sink);
            return;
        }
        let cacheable = key.len() <= MAX_KEY
            && cache.is_some()
            && !(w.whole_memoized && start == 0 && end == buf.len());
        // A segment that starts with U+2581 is keyed with `' '` in its place:
        // the raw key of a chunk that is that one word, so ` word` and
        // ` word,` share an entry (invariant `cache-transparent`). Exact: every key stands for
        // the pieces of its bytes with `' '` read as U+2581.
        let mut raw = [0u8; MAX_KEY];
        let (kbuf, kstart, klen): (&[u8], usize, usize) = match key.strip_prefix(SPACE_MARK) {
            Some(rest) if cacheable => {
                raw[0] = b' ';
                raw[1..=rest.len()].copy_from_slice(rest);
                (&raw, 0, rest.len() + 1)
            }
            _ => (buf, start, key.len()),
        };
        let mkey = kbuf.get(kstart..kstart + klen).unwrap_or_default();
        if let (true, Some(cache)) = (cacheable, cache.as_deref()) {
            if let Some(hit) = cache.get_inline(key128(kbuf, kstart, klen), klen) {
                sink.plain(base + start, hit.ids(), hit.lens());
                return;
            }
            if let Some(vals) = cache.get_arena(mkey) {
                let unk = vocab.unk_id_raw();
                let mut s = start;
                for &(id, len) in vals {
                    let e = s + len as usize;
                    if id != unk && id != NO_ID {
                        sink.plain_one(base + s, len as usize, id);
                    } else {
                        sink.piece(base + s, buf.get(s..e).unwrap_or_default(), id);
                    }
                    s = e;
                }
                return;
            }
        }
        w.seg.clear();
        let mut pos = start;
        while pos < end {
            let l = char_len_at(&buf[pos..end]);
            w.seg.push(Sym {
                start: pos,
                len: l as u32,
                id: self.char_id(&buf[pos..pos + l]),
                frozen: false,
            });
            pos += l;
        }
        if w.seg.len() > SMALL_SEGMENT {
            self.merge_heap(vocab, buf, base, w.seg, w.prev, w.next, w.heap, None, sink);
            return;
        }
        if w.seg.len() > 1 {
            self.merge_small(
                w.seg,
                &mut SmallWork {
                    cand: w.cand,
                    merged: w.cand_merged,
                    prev: w.prev,
                    next: w.next,
                },
            );
        }
        w.out.clear();
        let unk = vocab.unk_id_raw();
        let fallback = self.fallback.as_deref();
        let mut plain = true;
        for s in w.seg.iter() {
            let id = self.final_id(vocab, s);
            let bytes = &buf[s.start..s.start + s.len as usize];
            plain &= record(w.out, id, bytes, unk, fallback);
            sink.piece(base + s.start, bytes, id);
        }
        if let (true, Some(cache)) = (cacheable, cache) {
            cache.insert(mkey, w.out, plain);
        }
    }

    /// O(k^2) merging for short segments: repeatedly merge the best pair
    /// (highest key, leftmost on ties), which is the pair the heap would pop.
    /// Symbols stay in place (a merged-away one gets length 0, linked out
    /// through `next`/`prev`), so a merge costs one branch-free max scan over
    /// packed candidates ([`pack_cand`]) and two pair lookups, never a shift
    /// of the symbol array.
    fn merge_small(&self, seg: &mut Vec<Sym>, w: &mut SmallWork<'_>) {
        let k = seg.len();
        let SmallWork {
            cand,
            merged,
            prev,
            next,
        } = w;
        cand.clear();
        merged.clear();
        for (i, p) in seg.windows(2).enumerate() {
            let (c, m) = self.cand_of(&p[0], &p[1], i);
            cand.push(c);
            merged.push(m);
        }
        // The last symbol has no right neighbour.
        cand.push(0);
        merged.push(NO_ID);
        prev.clear();
        next.clear();
        prev.extend((0..k as u32).map(|i| i.wrapping_sub(1)));
        next.extend(1..=k as u32);
        loop {
            let best = cand.iter().copied().max().unwrap_or(0);
            if best == 0 {
                break;
            }
            let i = unpack_cand(best);
            let j = next[i] as usize;
            let (Some(&right), Some(&m)) = (seg.get(j), merged.get(i)) else {
                break;
            };
            seg[i].len += right.len;
            seg[i].id = m;
            seg[j].len = 0;
            cand[j] = 0;
            let nj = next[j];
            next[i] = nj;
            match seg.get(nj as usize) {
                Some(r) => {
                    prev[nj as usize] = i as u32;
                    (cand[i], merged[i]) = self.cand_of(&seg[i], r, i);
                }
                None => cand[i] = 0,
            }
            let p = prev[i] as usize;
            if let Some(l) = seg.get(p) {
                (cand[p], merged[p]) = self.cand_of(l, &seg[i], p);
            }
        }
        seg.retain(|s| s.len != 0);
    }

    /// [`pair`](Self::pair) packed for [`merge_small`](Self::merge_small):
    /// (candidate, merged id); candidate 0 when the pair does not merge.
    #[inline]
    fn cand_of(&self, a: &Sym, b: &Sym, i: usize) -> (u64, u32) {
        match self.pair(a, b) {
            Some((key, m)) => (pack_cand(key, i), m),
            None => (0, NO_ID),
        }
    }

    /// A heap entry for symbols `l`, `r`, recording `rev_merge` for UNUSED
    /// results when `rev` is given (`MaybeAddNewSymbolPair`).
    #[inline]
    fn entry(
        &self,
        vocab: &Vocab,
        syms: &[Sym],
        l: u32,
        r: u32,
        rev: &mut Option<&mut RevMerge>,
    ) -> Option<Entry> {
        let a = syms.get(l as usize)?;
        let b = syms.get(r as usize)?;
        let (key, merged) = self.pair(a, b)?;
        if let Some(rm) = rev.as_deref_mut() {
            if vocab.kind(merged) == super::PieceType::Unused {
                rm.insert(merged, ((a.start, a.len), (b.start, b.len)));
            }
        }
        Some(Entry {
            key,
            left: l,
            right: r,
            size: a.len + b.len,
            merged,
        })
    }

    /// sentencepiece's heap algorithm over `syms` (all of the text, or one
    /// long segment), then emission (with `rev_merge` resegmentation when
    /// `rev` is given).
    #[allow(clippy::too_many_arguments)]
    fn merge_heap<S: PieceSink>(
        &self,
        vocab: &Vocab,
        buf: &[u8],
        base: usize,
        syms: &mut [Sym],
        prev: &mut Vec<u32>,
        next: &mut Vec<u32>,
        heap_buf: &mut Vec<Entry>,
        mut rev: Option<&mut RevMerge>,
        sink: &mut S,
    ) {
        let n = syms.len();
        if n == 0 {
            return;
        }
        prev.clear();
        next.clear();
        prev.extend((0..n as u32).map(|i| i.wrapping_sub(1)));
        next.extend((1..=n as u32).map(|i| if i as usize == n { u32::MAX } else { i }));
        heap_buf.clear();
        for i in 1..n as u32 {
            if let Some(e) = self.entry(vocab, syms, i - 1, i, &mut rev) {
                heap_buf.push(e);
            }
        }
        let mut heap = BinaryHeap::from(std::mem::take(heap_buf));
        while let Some(top) = heap.pop() {
            let (l, r) = (top.left as usize, top.right as usize);
            let (Some(a), Some(b)) = (syms.get(l), syms.get(r)) else {
                continue;
            };
            if a.len == 0 || b.len == 0 || a.len + b.len != top.size {
                continue;
            }
            let right_len = b.len;
            syms[l].len += right_len;
            syms[l].id = top.merged;
            let rn = next[r];
            next[l] = rn;
            if let Some(p) = prev.get_mut(rn as usize) {
                *p = top.left;
            }
            syms[r].len = 0;
            if let Some(e) = self.entry(vocab, syms, prev[l], top.left, &mut rev) {
                heap.push(e);
            }
            if let Some(e) = self.entry(vocab, syms, top.left, next[l], &mut rev) {
                heap.push(e);
            }
        }
        *heap_buf = heap.into_vec();
        let mut i = 0u32;
        while let Some(s) = syms.get(i as usize) {
            match rev.as_deref() {
                Some(rm) => self.resegment(vocab, buf, base, (s.start, s.len), rm, 0, sink),
                None => self.emit(vocab, buf, base, s, sink),
            }
            i = next[i as usize];
        }
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

    #[allow(clippy::too_many_arguments)]
    fn resegment<S: PieceSink>(
        &self,
        vocab: &Vocab,
        buf: &[u8],
        base: usize,
        (start, len): (usize, u32),
        rev: &RevMerge,
        depth: u32,
        sink: &mut S,
    ) {
        let w = buf.get(start..start + len as usize).unwrap_or_default();
        let found = vocab.lookup_no_reserved(w);
        let unk = vocab.unk_id_raw();
        if depth > MAX_RESEGMENT_DEPTH {
            sink.piece(base + start, w, found.unwrap_or(unk));
            return;
        }
        let Some(id) = found.filter(|&id| vocab.kind(id).is_normal_like()) else {
            sink.piece(base + start, w, unk);
            return;
        };
        if vocab.kind(id) != super::PieceType::Unused {
            sink.piece(base + start, w, id);
            return;
        }
        match rev.get(&id) {
            Some(&(l, r)) => {
                self.resegment(vocab, buf, base, l, rev, depth + 1, sink);
                self.resegment(vocab, buf, base, r, rev, depth + 1, sink);
            }
            None => sink.piece(base + start, w, unk),
        }
    }
}

/// A merge candidate of [`Bpe::merge_small`] as one integer whose order is
/// the heap's: a set validity bit, the order key, then `255 - i` so that of
/// two equal keys the leftmost pair (smaller left index `i`) is larger.
/// `i < 256` (segments there have at most [`SMALL_SEGMENT`] symbols).
#[inline]
fn pack_cand(key: u32, i: usize) -> u64 {
    (1 << 40) | (u64::from(key) << 8) | (255 - (i as u64 & 0xFF))
}

/// The left index of a [`pack_cand`] value.
#[inline]
fn unpack_cand(c: u64) -> usize {
    255 - (c & 0xFF) as usize
}

/// The memo probe of chunk `i` of `text` (chunk ends `ends`), its inline
/// sets prefetched.
#[inline(always)]
fn probe_chunk(cache: &WordCache, text: &[u8], ends: &[usize], i: usize) -> Probe {
    let s = i
        .checked_sub(1)
        .and_then(|p| ends.get(p))
        .copied()
        .unwrap_or(0);
    let e = ends.get(i).copied().unwrap_or(s);
    let p = cache.probe(key128(text, s, e - s), e - s);
    if e - s <= INLINE_KEY {
        cache.prefetch(&p);
    }
    p
}

/// Calls `f` with the position of every `' '` in `text` after byte 0, in
/// order. Eight bytes at a time: English has a space every few bytes, where
/// a `memchr` call per space cost more than the scan.
#[inline]
fn for_each_space(text: &[u8], mut f: impl FnMut(usize)) {
    const SPACES: u64 = 0x2020_2020_2020_2020;
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    let mut words = text.chunks_exact(8);
    let mut base = 0usize;
    for w in words.by_ref() {
        let x = u64::from_le_bytes(<[u8; 8]>::try_from(w).unwrap_or([0; 8])) ^ SPACES;
        // The high bit of each byte of `x` that is zero (exact: no carries
        // cross bytes).
        let mut m = !(((x & LOW7) + LOW7) | x | LOW7);
        while m != 0 {
            let q = base + (m.trailing_zeros() / 8) as usize;
            m &= m - 1;
            if q > 0 {
                f(q);
            }
        }
        base += 8;
    }
    for (k, &b) in words.remainder().iter().enumerate() {
        if b == b' ' && base + k > 0 {
            f(base + k);
        }
    }
}

/// The packed code of the character that ends just before `text[q]`
/// (`q > 0`); `' '` counts as U+2581.
#[inline]
fn prev_code(text: &[u8], q: usize) -> u32 {
    let Some(&b) = q.checked_sub(1).and_then(|i| text.get(i)) else {
        return u32::MAX;
    };
    if b == b' ' {
        return SPACE_CODE;
    }
    if b < 0x80 {
        return u32::from(b);
    }
    let mut s = q - 1;
    while s > 0 && q - s < 4 && (text[s] & 0xC0) == 0x80 {
        s -= 1;
    }
    pack_char(&text[s..q])
}

#[cfg(test)]
mod tests {
    use super::{for_each_space, order_key};
    use proptest::prelude::*;

    proptest! {
        /// The word-at-a-time space scan finds exactly the spaces after
        /// byte 0, in order, at every alignment and next to any byte.
        #[test]
        fn space_scan_finds_every_space(
            text in prop::collection::vec(prop::sample::select(&[b' ', b'a', 0xE2, 0x96, 0x81, 0x00, 0x7F, 0xFF, 0xA0, 0x20 ^ 0x80][..]), 0..70),
        ) {
            let mut got = Vec::new();
            for_each_space(&text, |q| got.push(q));
            let want: Vec<usize> = (1..text.len()).filter(|&i| text[i] == b' ').collect();
            prop_assert_eq!(got, want);
        }
    }

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
