//! Vocabulary entries by the raw bytes they spell: the engine's whole-word
//! probe.
//!
//! Performance notes: on text seen once this probe runs for every word and
//! its table (megabytes) is mostly out of cache, so a probe costs what its
//! memory reads cost. Open addressing with the key inside the slot makes a
//! hit or a miss one cache line, usually: no control bytes apart (as a
//! `hashbrown` table has), no arena read for words of up to 16 bytes.

use std::sync::atomic::{AtomicU32, Ordering};

use super::key::{KEY_BYTES, WordKey};

/// Whether the merges rebuild an entry from its bytes (bits 24.. of a
/// slot's `meta`): not yet known, yes, no.
const UNKNOWN: u32 = 0;
const REBUILT: u32 = 1 << 24;
const NOT_REBUILT: u32 = 2 << 24;
const STATE: u32 = 3 << 24;
const LEN: u32 = (1 << 24) - 1;

/// One entry (24 bytes); `meta` 0 is an empty slot (every entry is 2
/// bytes or more).
struct Slot {
    head: u64,
    tail: u64,
    id: u32,
    /// The key's length, and the entry's rebuilt state. The state is
    /// written once, on the entry's first hit, by whichever thread sees it
    /// first; every writer stores the same value, so a relaxed store is
    /// enough (the length bits never change).
    meta: AtomicU32,
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
    /// `None` when an entry is longer than 16 MiB or the arena outgrows
    /// 32-bit offsets. An entry spelled twice keeps its first id.
    /// `ignore_merges`: every entry is its word's answer.
    pub(crate) fn build<'a>(
        vocab: impl Iterator<Item = (&'a [u8], u32)>,
        ignore_merges: bool,
    ) -> Option<Self> {
        let entries: Vec<(&[u8], u32)> = vocab.filter(|(t, _)| t.len() >= 2).collect();
        let size = (entries.len() * 4 / 3).max(16);
        let mut slots: Box<[Slot]> = (0..size)
            .map(|_| Slot {
                head: 0,
                tail: 0,
                id: 0,
                meta: AtomicU32::new(0),
            })
            .collect();
        let mut starts = vec![0u32; size].into_boxed_slice();
        let mut arena = Vec::new();
        let state = if ignore_merges { REBUILT } else { UNKNOWN };
        for (token, id) in entries {
            let len = u32::try_from(token.len()).ok().filter(|&l| l <= LEN)?;
            let key = WordKey::of(token);
            let mut at = home(key.hash(), size);
            loop {
                let meta = slots[at].meta.load(Ordering::Relaxed);
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
                        meta: AtomicU32::new(len | state),
                    };
                    break;
                }
                if same(&slots[at], meta, key, token, || starts[at], &arena) {
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

    #[inline]
    fn find(&self, word: &[u8], key: WordKey, hash: u64) -> Option<(&Slot, u32)> {
        let size = self.slots.len();
        let mut at = home(hash, size);
        loop {
            let slot = self.slots.get(at)?;
            let meta = slot.meta.load(Ordering::Relaxed);
            if meta == 0 {
                return None;
            }
            let start = || self.starts.get(at).copied().unwrap_or(u32::MAX);
            if same(slot, meta, key, word, start, &self.arena) {
                return Some((slot, meta));
            }
            at = if at + 1 == size { 0 } else { at + 1 };
        }
    }

    /// The entry spelling `word`, and whether it is the word's answer:
    /// `Some(true)` yes, `Some(false)` no (the merges do not rebuild it),
    /// `None` not known yet.
    #[inline]
    pub(crate) fn get(&self, word: &[u8], key: WordKey, hash: u64) -> Option<(u32, Option<bool>)> {
        let (slot, meta) = self.find(word, key, hash)?;
        let whole = match meta & STATE {
            REBUILT => Some(true),
            NOT_REBUILT => Some(false),
            _ => None,
        };
        Some((slot.id, whole))
    }

    /// Records whether the merges rebuild the entry spelling `word`.
    pub(crate) fn remember(&self, word: &[u8], key: WordKey, hash: u64, rebuilt: bool) {
        if let Some((slot, meta)) = self.find(word, key, hash) {
            let state = if rebuilt { REBUILT } else { NOT_REBUILT };
            slot.meta.store((meta & LEN) | state, Ordering::Relaxed);
        }
    }
}

/// Whether `slot` (its `meta` read) holds `word`; `start` gives where its
/// bytes are in `arena` (asked only past [`KEY_BYTES`]).
#[inline]
fn same(
    slot: &Slot,
    meta: u32,
    key: WordKey,
    word: &[u8],
    start: impl FnOnce() -> u32,
    arena: &[u8],
) -> bool {
    slot.head == key.head
        && slot.tail == key.tail
        && meta & LEN == key.len
        && (word.len() <= KEY_BYTES || {
            let start = start() as usize;
            arena.get(start..start + word.len()) == Some(word)
        })
}
