//! A per-thread memo of BPE chunk/segment results (like the word cache of HF
//! tokenizers' BPE). Purely an optimization: the BPE of a segment is a pure
//! function of its bytes, so a hit returns exactly what merging would. Keys
//! are always compared byte for byte (no hash-only matches).
//!
//! Two tiers:
//! - "inline": keys of at most 16 bytes whose result is at most 4 ordinary
//!   pieces with ids below 2^24; a 32-byte slot holds key, ids and piece
//!   lengths; 2-way set-associative (a set is one cache line) with two
//!   candidate sets per key, filled less loaded first. An entry whose sets
//!   are full goes to the arena tier instead (so a cyclic workload does
//!   not thrash); only when both tiers are at their size cap is the older
//!   way replaced;
//! - "arena": keys of at most [`MAX_KEY`] bytes with any result, and the
//!   raw path's whole chunks up to [`MAX_CHUNK_KEY`] bytes (a clause or
//!   paragraph of Chinese, which has no spaces to cut at); open addressing,
//!   cleared wholesale when full: at 32,768 entries or when keys and
//!   results pass [`ARENA_MAX_BYTES`]. The entry cap holds the distinct long
//!   chunks of a 1 MiB code or math file (about 11,000 of over 16 bytes,
//!   measured); at a quarter of that a steady workload cleared it every pass
//!   and missed on most long chunks. The byte cap holds the chunks of the
//!   1.6 MB mixed benchmark file (about 7 MiB).
//!
//! Both tables start small and double (rehashing) up to a cap, so an idle
//! thread or a small workload costs little memory; at the cap a thread uses
//! at most about 14 MiB per model (at most four models per thread).

use crate::backend::byte_memo::{ByteMemo, MemoCaps};
use crate::backend::prefetch::prefetch;

/// Segment keys longer than this are not memoized.
pub(crate) const MAX_KEY: usize = 64;
/// The raw path's whole chunks are memoized up to this length (arena tier
/// only): 98% of the bytes of Chinese prose lie in chunks (text between
/// safe spaces) no longer (measured on the zh corpus, 262 KB).
pub(crate) const MAX_CHUNK_KEY: usize = 4096;
/// Cap on the arena's key bytes plus 8 bytes per stored piece.
const ARENA_MAX_BYTES: usize = 8 << 20;
/// Longest key of the inline tier.
pub(crate) const INLINE_KEY: usize = 16;
/// Most pieces of an inline entry.
pub(crate) const INLINE_IDS: usize = 4;

const WAYS: usize = 2;
const INLINE_MIN_SETS: usize = 1 << 9;
const INLINE_MAX_SETS: usize = 1 << 15;
const ARENA_MIN_SLOTS: usize = 1 << 8;
const ARENA_MAX_SLOTS: usize = 1 << 16;
const ARENA_CAPS: MemoCaps = MemoCaps {
    max_key: MAX_CHUNK_KEY,
    max_bytes: ARENA_MAX_BYTES,
    min_slots: ARENA_MIN_SLOTS,
    max_slots: ARENA_MAX_SLOTS,
};

#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(32))]
struct InlineSlot {
    /// The key bytes, little-endian, zero above `klen`.
    key: u128,
    /// Up to four 24-bit ids, little-endian.
    ids: [u8; 3 * INLINE_IDS],
    /// `len - 1` of each piece, one nibble each.
    lens: u16,
    /// Key length; 0 for an empty slot.
    klen: u8,
    nids: u8,
}

/// A key of the inline tier with its two candidate sets ([`WordCache::probe`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Probe {
    key: u128,
    len: usize,
    /// The inline table's length when the sets were computed.
    table: usize,
    first: usize,
    second: usize,
}

/// An inline hit: ids and the byte length of each piece.
pub(crate) struct InlineHit {
    ids: [u32; INLINE_IDS],
    lens: [u8; INLINE_IDS],
    n: usize,
}

impl InlineHit {
    /// The ids.
    #[inline]
    pub(crate) fn ids(&self) -> &[u32] {
        &self.ids[..self.n]
    }
    /// The byte length of each piece.
    #[inline]
    pub(crate) fn lens(&self) -> &[u8] {
        &self.lens[..self.n]
    }
}

/// Memo for one model.
#[derive(Debug)]
pub(crate) struct WordCache {
    model_uid: u64,
    inline: Vec<InlineSlot>,
    inline_entries: usize,
    /// The arena tier (pieces as (id, byte length)).
    arena: ByteMemo<(u32, u32)>,
}

/// The (at most 16) bytes of `buf[start..start + len]` as a little-endian
/// `u128`, zero above `len`. Reads 16 bytes at once when `buf` has them.
#[inline]
pub(crate) fn key128(buf: &[u8], start: usize, len: usize) -> u128 {
    let len = len.min(INLINE_KEY);
    if let Some(chunk) = buf.get(start..start + INLINE_KEY) {
        let x = <[u8; INLINE_KEY]>::try_from(chunk)
            .map(u128::from_le_bytes)
            .unwrap_or(0);
        if len < INLINE_KEY {
            x & ((1u128 << (len * 8)) - 1)
        } else {
            x
        }
    } else {
        let mut x = 0u128;
        for (i, &b) in buf
            .get(start..start + len)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            x |= u128::from(b) << (8 * i);
        }
        x
    }
}

/// First slots of the two sets `key` may live in, in a table of `sets`
/// sets (two-choice hashing: an entry whose first set is full takes its
/// second, so at half load almost nothing overflows to the arena).
#[inline]
fn set_starts(key: u128, len: usize, sets: usize) -> (usize, usize) {
    let h = ((key as u64) ^ ((key >> 64) as u64).rotate_left(29) ^ (len as u64))
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    // Fibonacci hashing: the top bits are the well-mixed ones.
    let bits = sets.trailing_zeros();
    let first = (h >> (64 - bits)) as usize & (sets - 1);
    let h2 = (h ^ (h >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let second = (h2 >> (64 - bits)) as usize & (sets - 1);
    (first * WAYS, second * WAYS)
}

/// A memo of its own, for a caller that holds one per model (no
/// [`CacheSet`]): `model_uid` 0.
impl Default for WordCache {
    fn default() -> Self {
        Self::new(0)
    }
}

impl WordCache {
    fn new(model_uid: u64) -> Self {
        Self {
            model_uid,
            inline: Vec::new(),
            inline_entries: 0,
            arena: ByteMemo::new(ARENA_CAPS),
        }
    }

    /// Inline-tier lookup of a key of `len` (1..=16) bytes given by [`key128`].
    #[inline(always)]
    pub(crate) fn get_inline(&self, key: u128, len: usize) -> Option<InlineHit> {
        self.get_probed(&self.probe(key, len))
    }

    /// The inline sets of a key, computed once for a [`prefetch`] and the
    /// lookup that follows it ([`get_probed`]).
    ///
    /// [`prefetch`]: Self::prefetch
    /// [`get_probed`]: Self::get_probed
    #[inline(always)]
    pub(crate) fn probe(&self, key: u128, len: usize) -> Probe {
        let sets = self.inline.len() / WAYS;
        let (first, second) = if sets == 0 {
            (0, 0)
        } else {
            set_starts(key, len, sets)
        };
        Probe {
            key,
            len,
            table: self.inline.len(),
            first,
            second,
        }
    }

    /// Inline-tier lookup of a probed key. A probe taken before the table
    /// grew names stale sets: it is taken again.
    #[inline(always)]
    pub(crate) fn get_probed(&self, p: &Probe) -> Option<InlineHit> {
        let len = p.len;
        if self.inline.is_empty() || len > INLINE_KEY || len == 0 {
            return None;
        }
        let (i, j) = if p.table == self.inline.len() {
            (p.first, p.second)
        } else {
            set_starts(p.key, len, self.inline.len() / WAYS)
        };
        let first = self.inline.get(i..i + WAYS)?;
        let second = self.inline.get(j..j + WAYS)?;
        for slot in first.iter().chain(second) {
            if slot.klen as usize == len && slot.key == p.key {
                let mut hit = InlineHit {
                    ids: [0; INLINE_IDS],
                    lens: [0; INLINE_IDS],
                    n: usize::from(slot.nids).min(INLINE_IDS),
                };
                for k in 0..INLINE_IDS {
                    let b = &slot.ids[3 * k..3 * k + 3];
                    hit.ids[k] = u32::from(b[0]) | (u32::from(b[1]) << 8) | (u32::from(b[2]) << 16);
                    hit.lens[k] = ((slot.lens >> (4 * k)) & 0xF) as u8 + 1;
                }
                return Some(hit);
            }
        }
        None
    }

    /// Hints the CPU to load the inline sets of a probed key that will be
    /// looked up soon (no effect on results).
    #[inline]
    pub(crate) fn prefetch(&self, p: &Probe) {
        if p.table != self.inline.len() {
            return;
        }
        if let (Some(a), Some(b)) = (self.inline.get(p.first), self.inline.get(p.second)) {
            prefetch(std::ptr::from_ref(a), true);
            prefetch(std::ptr::from_ref(b), true);
        }
    }

    /// Arena-tier lookup: pieces as (id, byte length).
    #[inline]
    pub(crate) fn get_arena(&self, key: &[u8]) -> Option<&[(u32, u32)]> {
        self.arena.get(key)
    }

    /// Places `slot` in the first empty way of its set; with `evict`, a full
    /// set drops its older way. Returns whether the slot was placed and
    /// whether it took an empty way.
    fn place_inline(table: &mut [InlineSlot], slot: InlineSlot, evict: bool) -> (bool, bool) {
        let (i, j) = set_starts(slot.key, usize::from(slot.klen), table.len() / WAYS);
        let free = |at: usize| {
            table
                .get(at..at + WAYS)
                .map_or(0, |set| set.iter().filter(|s| s.klen == 0).count())
        };
        // The less loaded of the two sets (the first on a tie).
        let at = if free(j) > free(i) { j } else { i };
        if let Some(set) = table.get_mut(at..at + WAYS)
            && let Some(e) = set.iter().position(|s| s.klen == 0)
        {
            set[e] = slot;
            return (true, true);
        }
        match table.get_mut(i..i + WAYS) {
            Some(set) if evict => {
                set.copy_within(0..WAYS - 1, 1);
                set[0] = slot;
                (true, false)
            }
            _ => (false, false),
        }
    }

    fn grow_inline(&mut self) {
        let sets = (self.inline.len() / WAYS * 2).clamp(INLINE_MIN_SETS, INLINE_MAX_SETS);
        let old = std::mem::replace(&mut self.inline, vec![InlineSlot::default(); sets * WAYS]);
        self.inline_entries = 0;
        for s in old.into_iter().filter(|s| s.klen != 0) {
            if Self::place_inline(&mut self.inline, s, false).1 {
                self.inline_entries += 1;
            } else {
                // Both sets full in the larger table (rare): keep the entry
                // in the arena rather than drop it.
                let key = s.key.to_le_bytes();
                let klen = usize::from(s.klen).min(INLINE_KEY);
                let n = usize::from(s.nids).min(INLINE_IDS);
                let mut vals = [(0u32, 0u32); INLINE_IDS];
                for (k, v) in vals.iter_mut().enumerate().take(n) {
                    let b = &s.ids[3 * k..3 * k + 3];
                    let id = u32::from(b[0]) | (u32::from(b[1]) << 8) | (u32::from(b[2]) << 16);
                    *v = (id, u32::from((s.lens >> (4 * k)) & 0xF) + 1);
                }
                self.arena.insert(&key[..klen], &vals[..n]);
            }
        }
    }

    /// Memoizes `key` -> `vals` (pieces as (id, byte length)). `plain` says
    /// that every id is an ordinary piece (not unknown), which the inline
    /// tier requires.
    pub(crate) fn insert(&mut self, key: &[u8], vals: &[(u32, u32)], plain: bool) {
        if key.is_empty() || key.len() > MAX_CHUNK_KEY {
            return;
        }
        if plain
            && key.len() <= INLINE_KEY
            && vals.len() <= INLINE_IDS
            && vals
                .iter()
                .all(|&(id, len)| id < (1 << 24) && (1..=16).contains(&len))
        {
            let sets = self.inline.len() / WAYS;
            if sets == 0 || (self.inline_entries * 2 > self.inline.len() && sets < INLINE_MAX_SETS)
            {
                self.grow_inline();
            }
            let at_cap = self.inline.len() / WAYS >= INLINE_MAX_SETS;
            let k = key128(key, 0, key.len());
            let mut slot = InlineSlot {
                key: k,
                klen: key.len() as u8,
                nids: vals.len() as u8,
                ..InlineSlot::default()
            };
            for (k, &(id, len)) in vals.iter().enumerate() {
                slot.ids[3 * k..3 * k + 3].copy_from_slice(&id.to_le_bytes()[..3]);
                slot.lens |= ((len - 1) as u16) << (4 * k);
            }
            // A full set evicts only at the cap and when the arena is full
            // too: until then the entry goes to the arena, so a working set
            // that fits the two tiers together stops missing after one pass.
            let arena_full = self.arena.is_full();
            if let (true, took_empty) =
                Self::place_inline(&mut self.inline, slot, at_cap && arena_full)
            {
                self.inline_entries += usize::from(took_empty);
                return;
            }
            // Set full: keep the entry in the arena tier.
        }
        self.arena.insert(key, vals);
    }
}

/// Up to four models' memos per thread.
#[derive(Debug, Default)]
pub(crate) struct CacheSet {
    caches: Vec<WordCache>,
    next_evict: usize,
}

impl CacheSet {
    /// The memo for `model_uid`, created (evicting another) if needed.
    pub(crate) fn for_model(&mut self, model_uid: u64) -> &mut WordCache {
        const MAX_MODELS: usize = 4;
        if let Some(i) = self
            .caches
            .first()
            .filter(|c| c.model_uid == model_uid)
            .map(|_| 0)
        {
            return &mut self.caches[i];
        }
        let idx = match self.caches.iter().position(|c| c.model_uid == model_uid) {
            Some(i) => i,
            None if self.caches.len() < MAX_MODELS => {
                self.caches.push(WordCache::new(model_uid));
                self.caches.len() - 1
            }
            None => {
                let i = self.next_evict % MAX_MODELS;
                self.next_evict = self.next_evict.wrapping_add(1);
                self.caches[i] = WordCache::new(model_uid);
                i
            }
        };
        &mut self.caches[idx]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whole chunks up to [`MAX_CHUNK_KEY`] bytes go to the arena; its byte
    /// cap clears it wholesale, an entry over a quarter of the cap is not
    /// kept, and a lookup returns what was stored for that key or nothing.
    #[test]
    fn long_keys_and_the_byte_cap() {
        let mut c = WordCache::new(9);
        let key = |i: u32| -> Vec<u8> {
            let mut k = vec![b'a' + (i % 26) as u8; MAX_CHUNK_KEY - 4];
            k.extend_from_slice(&i.to_le_bytes());
            k
        };
        let vals = |i: u32| -> Vec<(u32, u32)> { (0..1000).map(|j| (i ^ j, 4)).collect() };
        c.insert(&[b'x'; MAX_CHUNK_KEY + 1], &[(1, 1)], false);
        assert!(c.get_arena(&[b'x'; MAX_CHUNK_KEY + 1]).is_none());
        // About 12 KB an entry: the cap is passed after some 690.
        let n = (ARENA_MAX_BYTES / (MAX_CHUNK_KEY + 8000) + 50) as u32;
        let mut cleared = false;
        for i in 0..n {
            c.insert(&key(i), &vals(i), true);
            assert_eq!(c.get_arena(&key(i)), Some(&vals(i)[..]), "{i}");
            cleared |= c.get_arena(&key(0)).is_none();
            assert!(c.arena.bytes() <= ARENA_MAX_BYTES);
        }
        assert!(cleared, "the byte cap never cleared the arena");
        for i in 0..n {
            if let Some(v) = c.get_arena(&key(i)) {
                assert_eq!(v, &vals(i)[..]);
            }
        }
        let before = c.arena.len();
        let huge: Vec<(u32, u32)> = (0..(ARENA_MAX_BYTES / 32 + 1) as u32)
            .map(|j| (j, 1))
            .collect();
        c.insert(b"huge", &huge, false);
        assert!(c.get_arena(b"huge").is_none());
        assert_eq!(c.arena.len(), before);
    }

    fn k(s: &[u8]) -> (u128, usize) {
        (key128(s, 0, s.len()), s.len())
    }

    #[test]
    fn roundtrip_growth_and_eviction() {
        let mut c = WordCache::new(7);
        assert!(c.get_arena(b"abc").is_none());
        assert!(c.get_inline(k(b"abc").0, 3).is_none());
        c.insert(b"abc", &[(1, 2), (3, 1)], true);
        let hit = c
            .get_inline(k(b"abc").0, 3)
            .map(|h| (h.ids().to_vec(), h.lens().to_vec()));
        assert_eq!(hit, Some((vec![1, 3], vec![2, 1])));
        assert!(c.get_inline(k(b"abd").0, 3).is_none());
        // A 16-byte window read from a longer buffer is masked to the key.
        assert_eq!(key128(b"abcXXXXXXXXXXXXXXXXX", 0, 3), k(b"abc").0);
        c.insert(b"abcd", &[(1, 2), (3, 1), (4, 1)], false);
        assert!(c.get_inline(k(b"abcd").0, 4).is_none());
        assert_eq!(c.get_arena(b"abcd"), Some(&[(1, 2), (3, 1), (4, 1)][..]));
        c.insert(
            b"abcdefgh",
            &[(70_000, 2), (3, 1), (16_000_000, 4), (5, 1)],
            true,
        );
        let hit = c
            .get_inline(k(b"abcdefgh").0, 8)
            .map(|h| (h.ids().to_vec(), h.lens().to_vec()));
        assert_eq!(
            hit,
            Some((vec![70_000, 3, 16_000_000, 5], vec![2, 1, 4, 1]))
        );
        let long = [b'x'; 40];
        c.insert(&long, &[(9, 40)], true);
        assert_eq!(c.get_arena(&long), Some(&[(9, 40)][..]));
        // Arena growth keeps entries; at the cap it is cleared.
        for i in 0..(ARENA_MAX_SLOTS as u32) {
            c.insert(
                &[&i.to_le_bytes()[..], &[0u8; 20]].concat(),
                &[(i, 24)],
                true,
            );
            if (i as usize) < ARENA_MAX_SLOTS / 4 {
                assert_eq!(
                    c.get_arena(&[&0u32.to_le_bytes()[..], &[0u8; 20]].concat()),
                    Some(&[(0, 24)][..])
                );
            }
        }
        assert!(c.arena.len() * 2 <= c.arena.slot_count());
        // Inline growth and eviction: the newest entry is always found.
        for i in 0..200_000u32 {
            let key = i.to_le_bytes();
            c.insert(&key, &[(i % (1 << 24), 4)], true);
            let (kk, kl) = k(&key);
            assert!(c.get_inline(kk, kl).is_some() || c.get_arena(&key).is_some());
        }
        assert_eq!(c.inline.len(), INLINE_MAX_SETS * WAYS);
        // Below the cap nothing is lost: overflow goes to the arena.
        let mut d = WordCache::new(2);
        for i in 0..3000u32 {
            d.insert(format!(" w{i}").as_bytes(), &[(i, 3)], true);
        }
        for i in 0..3000u32 {
            let key = format!(" w{i}");
            let (kk, kl) = k(key.as_bytes());
            assert!(
                d.get_inline(kk, kl).is_some() || d.get_arena(key.as_bytes()).is_some(),
                "{key}"
            );
        }
        // Two-choice placement (the less loaded set): few short entries
        // overflow into the arena (simulated: 38 of these 3000; with one
        // set per key, 448).
        assert!(
            d.arena.len() <= 60,
            "{} of 3000 in the arena",
            d.arena.len()
        );
        // At the inline cap with room in the arena, a full set overflows
        // there rather than evicting: every entry stays findable.
        let mut e = WordCache::new(3);
        let n = (INLINE_MAX_SETS * WAYS) as u32;
        for i in 0..n {
            e.insert(&i.to_le_bytes(), &[(i % (1 << 24), 4)], true);
        }
        assert_eq!(e.inline.len(), INLINE_MAX_SETS * WAYS);
        assert!(e.arena.len() * 2 < ARENA_MAX_SLOTS);
        for i in 0..n {
            let key = i.to_le_bytes();
            let (kk, kl) = k(&key);
            assert!(
                e.get_inline(kk, kl).is_some() || e.get_arena(&key).is_some(),
                "{i}"
            );
        }
        // A probe taken before the inline table grew still finds its key.
        let mut f = WordCache::new(4);
        f.insert(b" probe", &[(7, 6)], true);
        let (pk, pl) = k(b" probe");
        let stale = f.probe(pk, pl);
        for i in 0..5000u32 {
            f.insert(format!(" g{i}").as_bytes(), &[(i, 3)], true);
        }
        assert_ne!(f.inline.len(), stale.table);
        assert!(f.get_probed(&stale).is_some_and(|h| h.ids() == [7]));
        let mut set = CacheSet::default();
        for uid in 0..6 {
            set.for_model(uid).insert(b"x", &[(uid as u32, 1)], true);
        }
        assert!(set.caches.len() <= 4);
    }
}
