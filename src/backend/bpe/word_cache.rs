//! The engine's per-thread word cache: words of several tokens, by their
//! key, with ids (and the bytes of words past the key) in arenas: no
//! allocation per word.

use hashbrown::HashTable;

use super::key::{KEY_BYTES, WordKey};

/// Words kept before the cache starts again (`tokenizers`' default is
/// 65,536; a multi-megabyte prompt's distinct words overflow that).
const WORDS_MAX: usize = 1 << 18;

#[derive(Clone, Copy)]
struct Entry {
    key: WordKey,
    /// The word's bytes in `bytes` (words past [`KEY_BYTES`] only).
    at: u32,
    ids: u32,
    ids_len: u32,
}

#[derive(Default)]
pub(super) struct WordCache {
    table: HashTable<Entry>,
    bytes: Vec<u8>,
    ids: Vec<u32>,
}

impl WordCache {
    #[inline]
    pub(super) fn get(&self, word: &[u8], key: WordKey, hash: u64) -> Option<&[u32]> {
        let e = self.table.find(hash, |e| {
            e.key == key
                && (word.len() <= KEY_BYTES || {
                    let at = e.at as usize;
                    self.bytes.get(at..at + word.len()) == Some(word)
                })
        })?;
        self.ids.get(e.ids as usize..(e.ids + e.ids_len) as usize)
    }

    /// Remembers `word`'s ids; a full cache starts again (one clear is
    /// cheaper than tracking ages, and a thread's working set refills it).
    pub(super) fn insert(&mut self, word: &[u8], key: WordKey, hash: u64, ids: &[u32]) {
        if self.table.len() >= WORDS_MAX {
            self.table.clear();
            self.bytes.clear();
            self.ids.clear();
        }
        let (Ok(at), Ok(at_ids), Ok(ids_len)) = (
            u32::try_from(self.bytes.len()),
            u32::try_from(self.ids.len()),
            u32::try_from(ids.len()),
        ) else {
            return;
        };
        if word.len() > KEY_BYTES {
            self.bytes.extend_from_slice(word);
        }
        self.ids.extend_from_slice(ids);
        let entry = Entry {
            key,
            at,
            ids: at_ids,
            ids_len,
        };
        self.table.insert_unique(hash, entry, |e| e.key.hash());
    }
}

/// Slots of the [`DirectCache`] (32 bytes each: 256 KiB a thread, what a
/// core's L2 holds beside the text and the output).
const DIRECT_SLOTS: usize = 1 << 13;

/// Ids a direct slot holds inline.
const DIRECT_IDS: usize = 3;

#[derive(Clone, Copy)]
struct DirectSlot {
    head: u64,
    tail: u64,
    /// The word's length (0: empty) in bits 0..8, its ids' count above.
    meta: u32,
    ids: [u32; DIRECT_IDS],
}

/// The first word cache asked, for words of up to 16 bytes and three
/// tokens (nearly all of them, one-entry words included): direct-mapped and
/// small enough to stay in a core's cache, the key and the ids in the slot,
/// so a hit is one line already near; a colliding word takes the slot over.
pub(super) struct DirectCache {
    slots: Box<[DirectSlot]>,
}

impl Default for DirectCache {
    fn default() -> Self {
        let empty = DirectSlot {
            head: 0,
            tail: 0,
            meta: 0,
            ids: [0; DIRECT_IDS],
        };
        Self {
            slots: vec![empty; DIRECT_SLOTS].into_boxed_slice(),
        }
    }
}

/// The slot of a hash: bits the vocabulary probe (the high ones) and the
/// [`WordCache`] (the low ones) do not index by.
#[inline]
fn direct_slot(hash: u64) -> usize {
    (hash >> 32) as usize & (DIRECT_SLOTS - 1)
}

impl DirectCache {
    /// Whether a word with this key is looked up here.
    #[inline]
    fn holds(key: WordKey) -> bool {
        key.len as usize <= KEY_BYTES
    }

    /// The ids of a word with this key.
    #[inline]
    pub(super) fn get(&self, key: WordKey, hash: u64) -> Option<&[u32]> {
        if !Self::holds(key) {
            return None;
        }
        let slot = self.slots.get(direct_slot(hash))?;
        if slot.meta & 0xFF != key.len || slot.head != key.head || slot.tail != key.tail {
            return None;
        }
        slot.ids.get(..(slot.meta >> 8) as usize)
    }

    /// Remembers a word's ids, unless they are too many for a slot.
    #[inline]
    pub(super) fn insert(&mut self, key: WordKey, hash: u64, ids: &[u32]) {
        if ids.len() > DIRECT_IDS || !Self::holds(key) {
            return;
        }
        let Some(slot) = self.slots.get_mut(direct_slot(hash)) else {
            return;
        };
        slot.head = key.head;
        slot.tail = key.tail;
        slot.meta = key.len | (ids.len() as u32) << 8;
        slot.ids[..ids.len()].copy_from_slice(ids);
    }
}
