//! Building [`Bpe`]'s tables from the vocabulary: character ids (virtual
//! ids for characters that are only inside pieces), the adjacency sets that
//! decide safe cuts, and the pair table.

use std::sync::atomic::Ordering as AtomicOrdering;

use rustc_hash::{FxHashMap, FxHashSet};

use super::super::PieceType;
use super::super::model::{NO_ID, Vocab};
use super::super::utf8::{SPACE_MARK, char_len_at, pack_char};
use super::{BMP, Bpe, LEFT, NEXT_UID, RIGHT, SPACE_CODE, bmp_cp, order_key};

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
pub(super) struct PairTable {
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
    pub(super) fn get(&self, pair: u64) -> Option<(u32, u32)> {
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

/// The symbol ids of single characters: `ascii` for ASCII, `chars` (packed
/// codes) for the rest.
type CharIds = ([u32; 128], FxHashMap<u32, u32>);

impl Bpe {
    pub(crate) fn new(vocab: &Vocab, fallback: Option<Box<[u32; 256]>>) -> Self {
        let n = vocab.len();
        let ((mut ascii, mut chars), has_unused) = single_char_ids(vocab);
        let (ascii_adj, adj) = virtual_ids_and_adjacency(vocab, &mut ascii, &mut chars);
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
        bpe.bmp_id = bpe.bmp_ids();
        bpe.mark_bmp_flags(vocab);
        bpe.scan_user_defined(vocab);
        bpe.mark_space_adjacency();
        let merges = bpe.merge_pairs(vocab);
        bpe.merges = PairTable::new(&merges, |id| order_key(vocab.score(id)));
        bpe
    }

    /// Every BMP character's symbol id (by code point), from `ascii` and
    /// `chars`, so the scan looks ids up without hashing.
    fn bmp_ids(&self) -> Vec<u32> {
        let mut bmp_id = vec![NO_ID; BMP];
        for (cp, slot) in bmp_id.iter_mut().enumerate().take(128) {
            *slot = self.ascii[cp];
        }
        for (&code, &id) in &self.chars {
            let bytes = code.to_be_bytes();
            let start = bytes.iter().position(|&b| b != 0).unwrap_or(3);
            if let Some(cp) = bmp_cp(&bytes[start..])
                && let Some(slot) = bmp_id.get_mut(cp)
            {
                *slot = id;
            }
        }
        bmp_id
    }

    /// Sets `bmp_flags`: which BMP characters are followed / preceded by some
    /// character inside a mergeable piece (the scan's cheap pre-filter).
    fn mark_bmp_flags(&mut self, vocab: &Vocab) {
        for id in 0..vocab.len() as u32 {
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
                    self.bmp_flags[a] |= RIGHT;
                    self.bmp_flags[b] |= LEFT;
                }
                prev = cp;
                i += l;
            }
        }
    }

    /// Sets `ud_lead` and `ud_space_free` from the user-defined symbols
    /// (where the scan must try the matcher, and whether the raw path's cuts
    /// before spaces are safe).
    fn scan_user_defined(&mut self, vocab: &Vocab) {
        for id in 0..vocab.len() as u32 {
            if vocab.in_map(id) && vocab.kind(id) == PieceType::UserDefined {
                let p = vocab.piece(id);
                if let Some(&b) = p.first() {
                    self.ud_lead[usize::from(b)] = true;
                }
                if p.len() > 1 && p[1..].windows(3).any(|w| w == SPACE_MARK) {
                    self.ud_space_free = false;
                }
            }
        }
    }

    /// Sets the U+2581 adjacency bits (`before_space`, `after_space`,
    /// `space_space`) from `adj`, so the space checks need no hash lookup.
    fn mark_space_adjacency(&mut self) {
        let sp = u64::from(SPACE_CODE);
        for c in 0u8..128 {
            if self.adj.contains(&((u64::from(c) << 32) | sp)) {
                self.before_space |= 1u128 << c;
            }
            if self.adj.contains(&((sp << 32) | u64::from(c))) {
                self.after_space |= 1u128 << c;
            }
        }
        self.space_space = self.adj.contains(&((sp << 32) | sp));
    }

    /// The pair table's entries: every split of every mergeable piece into
    /// two halves that can be symbols (a single character, or a mergeable
    /// piece), as (left id << 32 | right id, merged id).
    fn merge_pairs(&self, vocab: &Vocab) -> Vec<(u64, u32)> {
        let mut merges: Vec<(u64, u32)> = Vec::new();
        for id in 0..vocab.len() as u32 {
            if !vocab.mergeable(id) {
                continue;
            }
            let p = vocab.piece(id);
            let mut k = char_len_at(p);
            while k < p.len() {
                // The right half is looked up only when the left one is a
                // symbol.
                if let Some(l) = self.half_id(vocab, &p[..k])
                    && let Some(r) = self.half_id(vocab, &p[k..])
                {
                    merges.push(((u64::from(l) << 32) | u64::from(r), id));
                }
                k += char_len_at(&p[k..]);
            }
        }
        merges
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
}

/// Single-character pieces (any type: sentencepiece's BPE puts every piece
/// in one map), and whether the model has UNUSED pieces.
fn single_char_ids(vocab: &Vocab) -> (CharIds, bool) {
    let mut ascii = [NO_ID; 128];
    let mut chars: FxHashMap<u32, u32> = FxHashMap::default();
    let mut has_unused = false;
    for id in 0..vocab.len() as u32 {
        if !vocab.in_map(id) {
            continue;
        }
        let p = vocab.piece(id);
        if vocab.kind(id) == PieceType::Unused {
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
    ((ascii, chars), has_unused)
}

/// Gives characters that occur inside mergeable pieces but are not pieces
/// themselves virtual ids (>= vocab size) so that pair lookups stay
/// id-based, and collects which characters are adjacent inside a mergeable
/// piece: (`ascii_adj`, `adj`).
fn virtual_ids_and_adjacency(
    vocab: &Vocab,
    ascii: &mut [u32; 128],
    chars: &mut FxHashMap<u32, u32>,
) -> (Box<[u128; 128]>, FxHashSet<u64>) {
    let n = vocab.len();
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
    (ascii_adj, adj)
}
