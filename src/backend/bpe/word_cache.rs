//! The engine's per-thread cache of the words its [`super::WordTable`]
//! does not hold (short words of many ids, long words), by their key, with
//! ids (and the bytes of words past the key) in arenas: no allocation per
//! word.

use hashbrown::HashTable;

use super::key::{KEY_BYTES, WordKey};

/// Words kept before the cache starts again (`tokenizers`' default is
/// 65,536; a multi-megabyte prompt's distinct words overflow that).
const WORDS_MAX: usize = 1 << 18;

/// Bytes of words past the key kept before the cache starts again (words
/// of up to 256 bytes: a full cache of long words stays under 8 MiB).
const BYTES_MAX: usize = 8 << 20;

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
        if self.table.len() >= WORDS_MAX || self.bytes.len() + word.len() > BYTES_MAX {
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
