//! A bounded map from byte strings to short lists of values: the
//! SentencePiece engine's per-thread arena tier (chunks of text → pieces,
//! invariant `cut-where-no-entry-joins`'s cache).
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

/// The hash a [`ByteMemo`] places `key` by.
#[inline]
pub(crate) fn hash(key: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(key);
    h.finish()
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
    fn has_room(&self, key_len: usize, vals: usize) -> bool {
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
