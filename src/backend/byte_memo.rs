//! A bounded map from byte strings to short lists of values, for the
//! per-thread memos of the encoders: the SentencePiece engine's arena tier
//! (chunks of text → pieces, claim 292's cache) and the line memo (line
//! groups → ids, claim 357).
//!
//! Open addressing over a power-of-two slot table, kept at most half full;
//! keys and values live in two pools, so an entry costs no allocation of
//! its own and a hit is a slot, a key compare and a slice. The table starts
//! small and doubles up to its cap; at the cap, or when the pools pass their
//! byte cap, it is emptied whole (no eviction bookkeeping on the hot path).
//! Keys are compared byte for byte: a hash collision is a miss.

use std::hash::Hasher;

use rustc_hash::FxHasher;

/// The caps of one [`ByteMemo`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct MemoCaps {
    /// Keys longer than this are not kept.
    pub max_key: usize,
    /// Key bytes plus value bytes kept before the table is emptied; an entry
    /// over a quarter of it is not kept.
    pub max_bytes: usize,
    /// The slot table's first and largest sizes (powers of two).
    pub min_slots: usize,
    pub max_slots: usize,
}

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    hash: u32,
    key_len: u32,
    key_off: u32,
    val_off: u32,
    val_len: u32,
}

/// The hash a [`ByteMemo`] places `key` by (callers that need it for more,
/// as the line memo's sampling, compute it once).
#[inline]
pub(crate) fn hash(key: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(key);
    h.finish()
}

/// Which keys were seen before: one bit per hash in 2^20 (128 KiB), the
/// whole filter emptied once a sixteenth of its bits are set, so a key not
/// seen passes for seen at most one time in sixteen.
struct SeenFilter {
    bits: FilterBytes,
    set: usize,
}

/// The filter's bytes: a private anonymous mapping where the system gives
/// one, else the heap. Mapped, a thread's filter stays out of the heap the
/// encoders grow and free their buffers in: on the heap, with glibc's
/// thresholds fixed, it moved later buffers so that some text seen once
/// encoded up to 2× slower (the SentencePiece engine on Chinese, claim
/// 359).
enum FilterBytes {
    Mapped(memmap2::MmapMut),
    Heap(Box<[u8]>),
}

impl FilterBytes {
    fn new(len: usize) -> Self {
        match memmap2::MmapOptions::new().len(len).map_anon() {
            Ok(map) => Self::Mapped(map),
            Err(_) => Self::Heap(vec![0; len].into_boxed_slice()),
        }
    }

    #[inline]
    fn bytes(&mut self) -> &mut [u8] {
        match self {
            Self::Mapped(map) => map,
            Self::Heap(bytes) => bytes,
        }
    }
}

/// Bits of a [`SeenFilter`] (a power of two).
const SEEN_BITS: usize = 1 << 20;

impl Default for SeenFilter {
    fn default() -> Self {
        Self {
            bits: FilterBytes::new(SEEN_BITS / 8),
            set: 0,
        }
    }
}

impl SeenFilter {
    /// Whether a key of hash `h` was seen before; marks it seen.
    #[inline]
    fn seen(&mut self, h: u64) -> bool {
        let at = ((h >> 12) as usize) & (SEEN_BITS - 1);
        let (byte, bit) = (at / 8, 1u8 << (at % 8));
        let Some(w) = self.bits.bytes().get_mut(byte) else {
            return false;
        };
        if *w & bit != 0 {
            return true;
        }
        *w |= bit;
        self.set += 1;
        if self.set > SEEN_BITS / 16 {
            self.bits.bytes().fill(0);
            self.set = 0;
        }
        false
    }
}

/// How many of the recent keys were seen before: a moving average over
/// about 32, in 2^16ths. A memo looks keys up only while it is at least
/// fifteen in sixteen (text encoded again), since a lookup that misses costs
/// more than the memo saves on text mostly new.
#[derive(Default)]
struct SeenRate(u32);

impl SeenRate {
    const ONE: u32 = 1 << 16;
    const LOOKUP: u32 = Self::ONE / 16 * 15;

    /// Counts one key, `seen` or not; whether a seen key is worth a lookup.
    #[inline]
    fn look_up(&mut self, seen: bool) -> bool {
        self.0 = self.0 - self.0 / 32 + u32::from(seen) * (Self::ONE / 32);
        seen && self.0 >= Self::LOOKUP
    }
}

/// Keys → ids that only remembers what recurs, the table of the byte-level
/// BPEs' clause and line memos (claims 352 and 357): a key is worth a
/// lookup only when seen before while most recent keys were too, so text
/// seen once pays a filter bit per key, not a table entry. At most 2^15
/// slots (16,384 keys: a bounded size on any input, since a router's
/// thread keeps it for the process's life) and 4 MiB of keys and ids; a
/// key over 64 KiB is not remembered. A caller that asks
/// [`keeps`](RecurringMemo::keeps) before inserting gets a full table that
/// keeps what it holds until its lookups mostly miss (claim 385).
pub(crate) struct RecurringMemo {
    table: ByteMemo<u32>,
    seen: SeenFilter,
    rate: SeenRate,
    /// Since the table last had no room for a key: lookups, and those
    /// that found their key ([`RecurringMemo::keeps`]).
    full: Option<(u32, u32)>,
}

/// A full table is emptied when, over a window of as many lookups as it
/// holds entries (at least this many), fewer than one in
/// [`STALE_RATIO`] found their key.
const MIN_WINDOW: u32 = 1024;
const STALE_RATIO: u32 = 4;

impl Default for RecurringMemo {
    fn default() -> Self {
        Self {
            table: ByteMemo::new(MemoCaps {
                max_key: u16::MAX as usize,
                max_bytes: 4 << 20,
                min_slots: 1 << 8,
                max_slots: 1 << 15,
            }),
            seen: SeenFilter::default(),
            rate: SeenRate::default(),
            full: None,
        }
    }
}

impl RecurringMemo {
    /// Whether a key of hash `h` ([`hash`]) is worth a lookup; marks it
    /// seen.
    #[inline]
    pub(crate) fn look_up(&mut self, h: u64) -> bool {
        let seen = self.seen.seen(h);
        self.rate.look_up(seen)
    }

    /// Marks a key of hash `h` seen, without counting it in the rate;
    /// whether it was seen before.
    #[inline]
    pub(crate) fn mark_seen(&mut self, h: u64) -> bool {
        self.seen.seen(h)
    }

    /// The next keys come back (a caller found it so): they are looked up
    /// from the first, without waiting for the rate to rise.
    pub(crate) fn expect_recurring(&mut self) {
        self.rate.0 = SeenRate::ONE;
    }

    /// The ids kept for `key` (of hash `h`).
    #[inline]
    pub(crate) fn get(&self, key: &[u8], h: u64) -> Option<&[u32]> {
        self.table.get_hashed(key, h)
    }

    /// [`get`](Self::get), counted for [`keeps`](Self::keeps) while the
    /// table is full.
    #[inline]
    pub(crate) fn get_counted(&mut self, key: &[u8], h: u64) -> Option<&[u32]> {
        let found = self.table.get_hashed(key, h);
        if let Some((lookups, hits)) = &mut self.full {
            *lookups += 1;
            *hits += u32::from(found.is_some());
        }
        found
    }

    /// Whether a key of `len` bytes that [`get_counted`](Self::get_counted)
    /// just missed should be encoded apart and kept (with at most `len`
    /// ids). Yes while the table has room. A full table keeps what it
    /// holds, and the key is not kept, unless a whole window of lookups
    /// since it filled mostly missed (the text moved on): then it is
    /// emptied and learns again. So text that recurs in a cycle longer
    /// than the table holds is answered for the part the table took.
    /// Emptying the table whenever it filled answered none of it, and the
    /// keys split out to be kept made such text slower than no memo at
    /// all (claim 385).
    pub(crate) fn keeps(&mut self, len: usize) -> bool {
        if self.table.has_room(len, len) {
            self.full = None;
            return true;
        }
        let window = (self.table.entries as u32).max(MIN_WINDOW);
        let (lookups, hits) = self.full.get_or_insert((0, 0));
        if *lookups < window {
            return false;
        }
        if hits.saturating_mul(STALE_RATIO) < *lookups {
            self.table.clear();
            self.full = None;
            return true;
        }
        // Still answering: judge the next window afresh.
        *lookups = 0;
        *hits = 0;
        false
    }

    /// Keeps `key` (of hash `h`, absent) → `ids`.
    pub(crate) fn insert(&mut self, key: &[u8], h: u64, ids: &[u32]) {
        self.table.insert_hashed(key, h, ids);
    }

    /// Entries held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    /// Bits the seen filter has set (tests watch it start again).
    #[cfg(test)]
    pub(crate) fn seen_bits(&self) -> usize {
        self.seen.set
    }
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct ByteMemo<V> {
    caps: MemoCaps,
    slots: Vec<Slot>,
    keys: Vec<u8>,
    vals: Vec<V>,
    entries: usize,
}

impl<V: Copy> ByteMemo<V> {
    /// An empty memo (no table until the first insert).
    pub(crate) fn new(caps: MemoCaps) -> Self {
        Self {
            caps,
            slots: Vec::new(),
            keys: Vec::new(),
            vals: Vec::new(),
            entries: 0,
        }
    }

    /// Entries held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries
    }

    /// The slot table's size (tests check the half-load invariant).
    #[cfg(test)]
    pub(crate) fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// Whether the table holds as many entries as its largest size takes.
    pub(crate) fn is_full(&self) -> bool {
        self.entries * 2 >= self.caps.max_slots
    }

    /// Key and value bytes held (what [`MemoCaps::max_bytes`] bounds).
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        Self::cost(self.keys.len(), self.vals.len())
    }

    fn cost(keys: usize, vals: usize) -> usize {
        keys + std::mem::size_of::<V>() * vals
    }

    /// The values kept for `key`.
    #[inline]
    pub(crate) fn get(&self, key: &[u8]) -> Option<&[V]> {
        self.get_hashed(key, hash(key))
    }

    /// [`get`](Self::get) with `h = hash(key)`.
    #[inline]
    pub(crate) fn get_hashed(&self, key: &[u8], h: u64) -> Option<&[V]> {
        if self.entries == 0 {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = (h as usize) & mask;
        loop {
            let s = self.slots.get(i)?;
            if s.key_len == 0 {
                return None;
            }
            if s.hash == (h >> 32) as u32 && s.key_len as usize == key.len() {
                let k = self
                    .keys
                    .get(s.key_off as usize..(s.key_off + s.key_len) as usize)?;
                if k == key {
                    return self
                        .vals
                        .get(s.val_off as usize..(s.val_off + s.val_len) as usize);
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// Keeps `key` → `vals` (the caller asked first: `key` is absent). An
    /// empty key, one over the key cap, or an entry over a quarter of the
    /// byte cap is not kept.
    pub(crate) fn insert(&mut self, key: &[u8], vals: &[V]) {
        self.insert_hashed(key, hash(key), vals);
    }

    /// [`insert`](Self::insert) with `h = hash(key)`.
    pub(crate) fn insert_hashed(&mut self, key: &[u8], h: u64, vals: &[V]) {
        if key.is_empty() || key.len() > self.caps.max_key {
            return;
        }
        if Self::cost(key.len(), vals.len()) > self.caps.max_bytes / 4 {
            // One entry that would take a quarter of the cap: not worth
            // clearing the others for.
            return;
        }
        if !self.has_room(key.len(), vals.len()) {
            self.clear();
        } else if self.entries * 2 >= self.slots.len() {
            self.grow();
        }
        let slot = Slot {
            hash: (h >> 32) as u32,
            key_len: key.len() as u32,
            key_off: self.keys.len() as u32,
            val_off: self.vals.len() as u32,
            val_len: vals.len() as u32,
        };
        Self::place(&mut self.slots, h, slot);
        self.keys.extend_from_slice(key);
        self.vals.extend_from_slice(vals);
        self.entries += 1;
    }

    /// Whether an entry of `key_len` bytes and `vals` values would be kept
    /// without emptying the table.
    pub(crate) fn has_room(&self, key_len: usize, vals: usize) -> bool {
        let over =
            Self::cost(self.keys.len() + key_len, self.vals.len() + vals) > self.caps.max_bytes;
        !over && (self.entries * 2 < self.slots.len() || self.slots.len() < self.caps.max_slots)
    }

    /// Empties the table (its slot table keeps its size).
    pub(crate) fn clear(&mut self) {
        self.slots.fill(Slot::default());
        self.keys.clear();
        self.vals.clear();
        self.entries = 0;
    }

    fn place(slots: &mut [Slot], h: u64, slot: Slot) {
        let mask = slots.len() - 1;
        let mut i = (h as usize) & mask;
        for _ in 0..slots.len() {
            if slots[i].key_len == 0 {
                slots[i] = slot;
                return;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let n = (self.slots.len() * 2).clamp(self.caps.min_slots, self.caps.max_slots);
        let old = std::mem::replace(&mut self.slots, vec![Slot::default(); n]);
        for s in old.into_iter().filter(|s| s.key_len != 0) {
            let key = self
                .keys
                .get(s.key_off as usize..(s.key_off + s.key_len) as usize)
                .unwrap_or_default();
            Self::place(&mut self.slots, hash(key), s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seen filter and rate the line memo asks before a lookup: a key
    /// is looked up once most recent keys were seen before, and the filter
    /// starts again when full.
    #[test]
    fn lookups_follow_the_seen_rate_and_the_filter_starts_again_when_full() {
        let mut memo = RecurringMemo::default();
        let abc = hash(b"abc");
        assert!(!memo.look_up(abc));
        // Seen, but the recent keys were not: no lookup yet.
        assert!(!memo.look_up(abc));
        let mut lookups = 0;
        // The rate passes fifteen sixteenths after about 90 keys seen.
        for _ in 0..128 {
            lookups += usize::from(memo.look_up(abc));
        }
        assert!(lookups > 0 && memo.look_up(abc));
        // New text brings the rate down again.
        for n in 0..64u32 {
            memo.look_up(hash(&n.to_le_bytes()));
        }
        assert!(!memo.look_up(abc));
        let mut n = 64u32;
        while memo.seen_bits() > 0 {
            memo.look_up(hash(&n.to_le_bytes()));
            n += 1;
        }
        assert!(n as usize >= (1 << 20) / 16 - 1);
        assert!(!memo.look_up(abc));
        assert_eq!(memo.len(), 0);
    }

    const SMALL: MemoCaps = MemoCaps {
        max_key: 64,
        max_bytes: 1 << 12,
        min_slots: 4,
        max_slots: 64,
    };

    #[test]
    fn keeps_grows_and_empties_whole_at_its_caps() {
        let mut m = ByteMemo::<u32>::new(SMALL);
        assert_eq!(m.get(b"abc"), None);
        m.insert(b"abc", &[1, 2]);
        m.insert(b"abd", &[3]);
        m.insert(b"e", &[]);
        assert_eq!(m.get(b"abc"), Some(&[1, 2][..]));
        assert_eq!(m.get(b"abd"), Some(&[3][..]));
        assert_eq!(m.get(b"e"), Some(&[][..]));
        assert_eq!(m.get(b"ab"), None);
        // Not kept: an empty key, a key over the cap, an entry over a
        // quarter of the byte cap.
        m.insert(b"", &[1]);
        m.insert(&[b'x'; 65], &[1]);
        m.insert(b"big", &[7; 300]);
        assert_eq!(
            (m.get(b""), m.get(&[b'x'; 65]), m.get(b"big")),
            (None, None, None)
        );
        // The table doubles to 64 slots (32 entries), then starts again
        // empty; the newest entries stay, the load stays at most half.
        for n in 0..40u32 {
            m.insert(&n.to_le_bytes(), &[n]);
            assert_eq!(m.get(&n.to_le_bytes()), Some(&[n][..]));
            assert!(m.len() * 2 <= m.slot_count());
        }
        assert_eq!(m.get(b"abc"), None);
        assert_eq!(m.slot_count(), 64);
        // The byte cap empties it too.
        let mut m = ByteMemo::<u32>::new(SMALL);
        for n in 0..30u32 {
            m.insert(&n.to_le_bytes(), &[n; 100]);
            assert!(m.bytes() <= SMALL.max_bytes);
        }
        assert!(m.len() < 30);
    }
}
