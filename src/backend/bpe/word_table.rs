//! The engine's table of short words: every word of at most [`SHORT_MAX`]
//! bytes and [`INLINE_IDS`] ids the thread has met, and, from the start,
//! every vocabulary entry that is its own word's answer (the seed).
//!
//! Performance notes (`docs/perf/byte_engine_2026-12-03.md`):
//! - One table, not a small first cache and a vocabulary probe behind it:
//!   a word the small cache had evicted, or an entry met for the first
//!   time, cost a second table's miss one word after the other. Seeded, a
//!   whole-entry word is a hit the first time it is seen, and a word not in
//!   the table is known to need the merge.
//! - The key is the word's bytes and its length in one `u128` (read as one
//!   16-byte load and masked, no copy), so a hit is one compare; the hash
//!   is one multiply, taken while the pre-tokens are gathered, so each
//!   word's slot is prefetched a chunk ahead of its lookup
//!   ([`super::ByteBpe::encode_ranges`]).
//! - Slots are 32 bytes on 32-byte bounds: a slot never spans two lines.
//! - A word found past its home slot is swapped into it (a valid move in a
//!   linear-probing table: the entry it displaces stays on its own chain),
//!   so a frequent word's next lookup is answered at home.

use crate::backend::huge_pages::HugeBox;

/// Words of at most this many bytes are keyed inline (the 16th byte of the
/// key is the length).
pub(super) const SHORT_MAX: usize = 15;

/// Ids a slot holds; a short word of more ids is kept by the word cache.
pub(super) const INLINE_IDS: usize = 3;

/// The key of a word no slot holds: a real key's top byte is a length of
/// at most [`SHORT_MAX`], an empty slot's key is 0.
pub(super) const NOT_SHORT: u128 = u128::MAX;

/// Set in a slot's key for a short word of more than [`INLINE_IDS`] ids,
/// which the word cache holds: the slot says so (no ids), so a short word
/// the table does not hold is known to be new without a probe of the word
/// cache. A word's key never has this bit (its top byte is a length), so a
/// lookup's compare never takes the marker for the word.
const IN_CACHE: u128 = 1 << 127;

/// A table grows when this share of its slots (in eighths) is taken.
const LOAD_EIGHTHS: usize = 5;

/// The most slots a thread's table grows to (16 MiB); a full one starts
/// again from the seed (DESIGN.md invariant `caches-bounded`).
const MAX_SLOTS: usize = 1 << 19;

/// One word: its key (0: empty), its ids and their count.
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
pub(super) struct Slot {
    key: u128,
    ids: [u32; INLINE_IDS],
    count: u32,
}

impl Slot {
    /// The slot's ids, all [`INLINE_IDS`] of them (those past
    /// [`Self::count`] are stale).
    #[inline(always)]
    pub(super) fn ids(&self) -> &[u32; INLINE_IDS] {
        &self.ids
    }

    #[inline(always)]
    pub(super) fn count(&self) -> usize {
        self.count as usize
    }

    #[inline(always)]
    pub(super) fn holds(&self, key: u128) -> bool {
        self.key == key
    }

    /// Whether the word is the word cache's (see [`IN_CACHE`]).
    #[inline(always)]
    pub(super) fn in_cache(&self) -> bool {
        self.key & IN_CACHE != 0
    }
}

/// Per length, the mask that keeps a key's word bytes.
const KEEP: [u128; 16] = {
    let mut keep = [0u128; 16];
    let mut n = 0;
    while n < 16 {
        keep[n] = if n == 0 {
            0
        } else {
            u128::MAX >> (128 - 8 * n)
        };
        n += 1;
    }
    keep
};

/// The key of `text[start..end]`, a word of 1 to [`SHORT_MAX`] bytes.
#[inline(always)]
pub(super) fn short_key(text: &[u8], start: usize, end: usize) -> u128 {
    let len = end - start;
    let tag = (len as u128) << 120;
    if let Some(Ok(bytes)) = text.get(start..start + 16).map(<[u8; 16]>::try_from) {
        return (u128::from_le_bytes(bytes) & KEEP[len & 15]) | tag;
    }
    short_key_at_end(text, start, end) | tag
}

/// [`short_key`]'s bytes for a word in the text's last 15 bytes: out of
/// line, so the gathering loop keeps its registers.
#[cold]
#[inline(never)]
fn short_key_at_end(text: &[u8], start: usize, end: usize) -> u128 {
    let mut bytes = [0u8; 16];
    if let (Some(to), Some(from)) = (bytes.get_mut(..end - start), text.get(start..end)) {
        to.copy_from_slice(from);
    }
    u128::from_le_bytes(bytes)
}

/// A key's hash: its halves folded and multiplied once; tables index by
/// the top bits, which depend on every bit of the key.
#[inline(always)]
pub(super) fn hash(key: u128) -> u64 {
    let (lo, hi) = (key as u64, (key >> 64) as u64);
    (lo ^ hi.rotate_left(29)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// See the module docs.
#[derive(Clone)]
pub(super) struct WordTable {
    slots: HugeBox<Slot>,
    /// `64 - log2(slots.len())`.
    shift: u32,
    taken: usize,
}

/// A copy of a table's slot address and shift, for a loop that prefetches
/// home slots while it holds no borrow of the table.
#[derive(Clone, Copy)]
pub(super) struct Homes {
    slots: *const Slot,
    shift: u32,
}

impl Homes {
    /// The home slot's address of `hash`, for
    /// [`prefetch`](crate::backend::prefetch::prefetch) (never read
    /// through: it may be stale once the table changes).
    #[inline(always)]
    pub(super) fn home_ptr(self, hash: u64) -> *const Slot {
        self.slots.wrapping_add((hash >> self.shift) as usize)
    }
}

/// What a lookup past the home slot found.
pub(super) enum Found {
    /// The word's slot (now its home).
    At(usize),
    /// Where the word would go.
    Vacant(usize),
}

impl WordTable {
    /// A table holding `words` (each word's bytes and its one id; a word
    /// listed twice keeps its first id). `None` for a word that is empty or
    /// longer than [`SHORT_MAX`].
    pub(super) fn seeded<'a>(
        words: impl ExactSizeIterator<Item = (&'a [u8], u32)>,
    ) -> Option<Self> {
        let wanted = (words.len() * 8 / LOAD_EIGHTHS + 1).next_power_of_two();
        let mut table = Self::with_slots(wanted.max(1 << 10));
        for (word, id) in words {
            if word.is_empty() || word.len() > SHORT_MAX {
                return None;
            }
            let key = short_key(word, 0, word.len());
            if let Found::Vacant(at) = table.find(key, hash(key)) {
                table.put(at, key, &[id]);
            }
        }
        Some(table)
    }

    fn with_slots(slots: usize) -> Self {
        Self {
            slots: HugeBox::filled(slots, Slot::default()),
            shift: 64 - slots.trailing_zeros(),
            taken: 0,
        }
    }

    /// The home slot of a hash.
    #[inline(always)]
    pub(super) fn home(&self, hash: u64) -> usize {
        (hash >> self.shift) as usize
    }

    /// Where the table's home slots are, until it next changes.
    #[inline(always)]
    pub(super) fn homes(&self) -> Homes {
        Homes {
            slots: self.slots.as_ptr(),
            shift: self.shift,
        }
    }

    /// The slots and the shift that takes a hash to its home slot.
    #[inline(always)]
    pub(super) fn view(&self) -> (&[Slot], u32) {
        (&self.slots, self.shift)
    }

    #[inline(always)]
    pub(super) fn slot(&self, at: usize) -> Option<&Slot> {
        self.slots.get(at)
    }

    /// The word's slot (its ids, or its [`Slot::in_cache`] marker), swapped
    /// into its home when found past it, or the vacancy that ends its chain.
    pub(super) fn find(&mut self, key: u128, hash: u64) -> Found {
        let mask = self.slots.len() - 1;
        let home = self.home(hash);
        let mut at = home;
        loop {
            let Some(slot) = self.slots.get(at) else {
                return Found::Vacant(home);
            };
            if slot.key & !IN_CACHE == key {
                self.slots.swap(home, at);
                return Found::At(home);
            }
            if slot.key == 0 {
                return Found::Vacant(at);
            }
            at = (at + 1) & mask;
        }
    }

    /// Keeps a word's ids at the vacancy [`Self::find`] gave: its ids, or
    /// for more than [`INLINE_IDS`] the mark that the word cache holds them.
    /// A table past its load grows, and one at its largest starts again
    /// from `seed`.
    pub(super) fn insert(&mut self, at: usize, key: u128, ids: &[u32], seed: &WordTable) {
        if ids.len() > INLINE_IDS {
            self.put(at, key | IN_CACHE, &[]);
        } else {
            self.put(at, key, ids);
        }
        if self.taken * 8 < self.slots.len() * LOAD_EIGHTHS {
            return;
        }
        if self.slots.len() >= MAX_SLOTS {
            self.clone_from(seed);
            return;
        }
        let mut grown = Self::with_slots(self.slots.len() * 2);
        for slot in self.slots.iter().filter(|s| s.key != 0) {
            let key = slot.key & !IN_CACHE;
            if let Found::Vacant(at) = grown.find(key, hash(key))
                && let Some(to) = grown.slots.get_mut(at)
            {
                *to = *slot;
                grown.taken += 1;
            }
        }
        *self = grown;
    }

    fn put(&mut self, at: usize, key: u128, ids: &[u32]) {
        let Some(slot) = self.slots.get_mut(at) else {
            return;
        };
        let mut inline = [0; INLINE_IDS];
        inline[..ids.len()].copy_from_slice(ids);
        *slot = Slot {
            key,
            ids: inline,
            count: ids.len() as u32,
        };
        self.taken += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_key_reads_the_same_near_the_end() {
        let text = b"abcdefghijklmnopqrstuvwxyz";
        for start in 0..text.len() {
            for end in start + 1..=(start + SHORT_MAX).min(text.len()) {
                let far = short_key(text, start, end);
                let alone = short_key(&text[start..end], 0, end - start);
                assert_eq!(far, alone, "{start}..{end}");
                assert_eq!((far >> 120) as usize, end - start);
            }
        }
    }

    #[test]
    fn a_word_of_many_ids_is_marked_not_held() {
        let seed = WordTable::seeded([(&b"ab"[..], 7u32)].into_iter()).unwrap();
        let mut table = seed.clone();
        let word = b"abcd";
        let key = short_key(word, 0, word.len());
        let Found::Vacant(at) = table.find(key, hash(key)) else {
            panic!("a new word is vacant");
        };
        table.insert(at, key, &[1, 2, 3, 4], &seed);
        // Past every growth, the word is found as the word cache's, and the
        // lookups' compare never takes the mark for the word.
        let mut words = 0u32;
        while table.slots.len() < 1 << 14 {
            let other = format!("w{words}");
            let k = short_key(other.as_bytes(), 0, other.len());
            if let Found::Vacant(at) = table.find(k, hash(k)) {
                table.insert(at, k, &[words], &seed);
            }
            words += 1;
        }
        let Found::At(at) = table.find(key, hash(key)) else {
            panic!("the marked word is found");
        };
        let slot = table.slots[at];
        assert!(slot.in_cache());
        assert!(!slot.holds(key));
        assert_eq!(slot.count(), 0);
        let home = table.slot(table.home(hash(key))).unwrap();
        assert!(!home.holds(key));
    }

    #[test]
    fn grows_and_starts_again_from_the_seed() {
        let seed = WordTable::seeded([(&b"ab"[..], 7u32)].into_iter()).unwrap();
        let mut table = seed.clone();
        let mut words = 0u32;
        while table.slots.len() < MAX_SLOTS {
            let word = format!("w{words}");
            let key = short_key(word.as_bytes(), 0, word.len());
            if let Found::Vacant(at) = table.find(key, hash(key)) {
                table.insert(at, key, &[words, 1], &seed);
            }
            words += 1;
        }
        let probe = |table: &mut WordTable, word: &[u8]| {
            let key = short_key(word, 0, word.len());
            match table.find(key, hash(key)) {
                Found::At(at) => Some(table.slots[at].ids[..table.slots[at].count()].to_vec()),
                Found::Vacant(_) => None,
            }
        };
        assert_eq!(probe(&mut table, b"ab"), Some(vec![7]));
        assert_eq!(probe(&mut table, b"w5"), Some(vec![5, 1]));
        // Fill the largest table: it starts again from the seed.
        while table.slots.len() == MAX_SLOTS && table.taken > 1 {
            let word = format!("w{words}");
            let key = short_key(word.as_bytes(), 0, word.len());
            if let Found::Vacant(at) = table.find(key, hash(key)) {
                table.insert(at, key, &[words], &seed);
            }
            words += 1;
        }
        assert_eq!(table.taken, 1);
        assert_eq!(probe(&mut table, b"ab"), Some(vec![7]));
        assert_eq!(probe(&mut table, b"w5"), None);
    }
}
