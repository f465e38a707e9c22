//! Vocabulary entries by the raw bytes they spell: the engine's whole-word
//! probe.
//!
//! Performance notes: the encode asks it only for words past the word
//! table's 15 bytes (the table is seeded with the short entries), and the
//! CJK cuts ask it whether the merges rebuild an entry. Its table
//! (megabytes) is mostly out of cache, so a probe costs what its memory
//! reads cost. Open addressing with the key inside the slot makes a
//! hit or a miss one cache line, usually: no control bytes apart (as a
//! `hashbrown` table has), no arena read for words of up to 16 bytes.

use super::key::{KEY_BYTES, WordKey};

/// Bit 31 of a slot's `meta`: the merges rebuild the entry from its bytes
/// (it is the word's answer); the bits below are the entry's length.
const REBUILT: u32 = 1 << 31;
const LEN: u32 = REBUILT - 1;

/// One entry (24 bytes); `meta` 0 is an empty slot (every entry is 2
/// bytes or more).
#[derive(Clone, Copy, Default)]
struct Slot {
    head: u64,
    tail: u64,
    id: u32,
    meta: u32,
}

/// Entries by their word's key, in a table three-quarters full (the
/// table's size, not a power of two, is what the cache holds of it); the
/// bytes of entries past [`KEY_BYTES`] in one arena.
pub(crate) struct VocabIndex {
    slots: Box<[Slot]>,
    /// Per slot, where its entry's bytes start in `arena` (read only for
    /// entries past [`KEY_BYTES`]).
    starts: Box<[u32]>,
    arena: Vec<u8>,
}

/// The first slot of a hash in a table of `len` slots (multiply-shift:
/// the hash's high bits, spread over any size).
#[inline]
fn home(hash: u64, len: usize) -> usize {
    ((u128::from(hash) * len as u128) >> 64) as usize
}

impl VocabIndex {
    /// `None` when an entry is longer than 2 GiB or the arena outgrows
    /// 32-bit offsets. An entry spelled twice keeps its first id.
    /// `rebuilt[i]`: whether the merges turn the `i`-th entry of `entries`
    /// into itself.
    pub(crate) fn build(entries: &[(&[u8], u32)], rebuilt: &[bool]) -> Option<Self> {
        let size = (entries.len() * 4 / 3).max(16);
        let mut slots = vec![Slot::default(); size].into_boxed_slice();
        let mut starts = vec![0u32; size].into_boxed_slice();
        let mut arena = Vec::new();
        for (&(token, id), &rebuilt) in entries.iter().zip(rebuilt) {
            let len = u32::try_from(token.len()).ok().filter(|&l| l <= LEN)?;
            let key = WordKey::of(token);
            let mut at = home(key.hash(), size);
            loop {
                let meta = slots[at].meta;
                if meta == 0 {
                    starts[at] = u32::try_from(arena.len()).ok()?;
                    if token.len() > KEY_BYTES {
                        arena.extend_from_slice(token);
                        u32::try_from(arena.len()).ok()?;
                    }
                    slots[at] = Slot {
                        head: key.head,
                        tail: key.tail,
                        id,
                        meta: len | if rebuilt { REBUILT } else { 0 },
                    };
                    break;
                }
                if same(&slots[at], key, token, || starts[at], &arena) {
                    break;
                }
                at = if at + 1 == size { 0 } else { at + 1 };
            }
        }
        Some(Self {
            slots,
            starts,
            arena,
        })
    }

    /// The entry spelling `word`, and whether it is the word's answer (the
    /// merges rebuild it from its bytes).
    #[inline]
    pub(crate) fn get(&self, word: &[u8], key: WordKey, hash: u64) -> Option<(u32, bool)> {
        let size = self.slots.len();
        let mut at = home(hash, size);
        loop {
            let slot = self.slots.get(at)?;
            if slot.meta == 0 {
                return None;
            }
            let start = || self.starts.get(at).copied().unwrap_or(u32::MAX);
            if same(slot, key, word, start, &self.arena) {
                return Some((slot.id, slot.meta & REBUILT != 0));
            }
            at = if at + 1 == size { 0 } else { at + 1 };
        }
    }
}

/// Whether `slot` holds `word`; `start` gives where its bytes are in
/// `arena` (asked only past [`KEY_BYTES`]).
#[inline]
fn same(slot: &Slot, key: WordKey, word: &[u8], start: impl FnOnce() -> u32, arena: &[u8]) -> bool {
    slot.head == key.head
        && slot.tail == key.tail
        && slot.meta & LEN == key.len
        && (word.len() <= KEY_BYTES || {
            let start = start() as usize;
            arena.get(start..start + word.len()) == Some(word)
        })
}
