//! The byte-level BPE engine: one merge by ranks for every byte-level
//! tokenizer the crate reads (`tokenizer.json` ByteLevel BPEs, tiktoken
//! encodings and rank files, Tekken, GGUF `gpt2` vocabularies).
//!
//! A word (one pre-token's bytes) is answered in this order:
//! 1. one byte: the byte's own id;
//! 2. the thread's direct cache ([`DirectCache`]): words of up to 16 bytes
//!    and three tokens, one-entry words included, in a table small enough to
//!    stay in a core's cache (256 KiB);
//! 3. the whole-word vocabulary probe ([`VocabIndex`]): an entry that spells
//!    the word is its answer when the model takes entries whole
//!    (`ignore_merges`, tiktoken) or when the merges rebuild it (decided for
//!    every entry when the engine is built, in parallel);
//! 4. the thread's map of words of several tokens ([`WordCache`], up to 64
//!    bytes);
//! 5. the merge ([`merge`]), on internal ids ([`Pairs`]).
//!
//! Invariant *merge-is-reference*: the merge is `tokenizers` 0.x's
//! `Word::merge_all` (the adjacent pair of lowest rank, leftmost on a tie,
//! until none is listed), so every answer is the reference's; the probe and
//! the cache only remember answers the merge gave or the model defines.
//!
//! Performance notes: on text seen once the direct cache answers most
//! words (84 % of English words after a warm-up on other text), so a hit
//! is one hash and one read of a line that is near; the probe's table
//! (megabytes) and the merge's pair lookups are where the engine waits on
//! memory (`docs/perf/byte_engine_2026-12-02.md`). Ids go straight into the
//! caller's vector, nothing is allocated per word. Short words merge by a
//! linear scan over their pair ranks (no heap: a word of a few symbols costs
//! less to rescan than to queue); long ones (a Chinese clause, a run of one
//! character) on a heap, so time stays `O(n log n)` in the word's length.

mod key;
mod merge;
mod vocab_index;
mod word_cache;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::backend::thread_scratch::ThreadScratch;
use key::WordKey;
use merge::Merger;
use vocab_index::VocabIndex;
use word_cache::{DirectCache, WordCache};

/// Where the engine writes ids: the crate's `Vec<u32>` or `tokenizers`'
/// `Vec<PipelineToken>` (the `tokenizer.json` walk's buffer).
pub(crate) trait IdSink {
    fn push_id(&mut self, id: u32);
    fn extend_ids(&mut self, ids: &[u32]);
}

impl IdSink for Vec<u32> {
    #[inline]
    fn push_id(&mut self, id: u32) {
        self.push(id);
    }
    #[inline]
    fn extend_ids(&mut self, ids: &[u32]) {
        self.extend_from_slice(ids);
    }
}

impl IdSink for Vec<tokenizers::pipeline::PipelineToken> {
    #[inline]
    fn push_id(&mut self, id: u32) {
        self.push(tokenizers::pipeline::PipelineToken::from(id));
    }
    #[inline]
    fn extend_ids(&mut self, ids: &[u32]) {
        self.extend(
            ids.iter()
                .map(|&id| tokenizers::pipeline::PipelineToken::from(id)),
        );
    }
}

/// Packs a pair of ids into the merge table's key.
#[inline]
pub(crate) fn pair_key(left: u32, right: u32) -> u64 {
    (u64::from(left) << 32) | u64::from(right)
}

/// A pair that no merge joins.
pub(crate) const NO_MERGE: u64 = u64::MAX;

/// Side of the dense grid of pairs of small internal ids.
const GRID: usize = 512;

/// The merges on internal ids: `(left, right)` → `rank << 32 | product`
/// ([`NO_MERGE`] for none), so comparing two values compares their ranks.
///
/// Performance notes: a word seen once is merged from its bytes, and each
/// merge step looks up two pairs; a map of every pair (280,000 for
/// Llama-3, 8 MiB) misses the cache on each. Pairs of two small ids (the
/// frequent merges, by the id order) are read from a grid of `u16`
/// indices (512 KiB) instead, the rest from the map.
pub(crate) struct Pairs {
    grid: Box<[u16]>,
    /// `grid` index → value; index 0 is [`NO_MERGE`].
    grid_values: Vec<u64>,
    /// Some pairs of small ids did not fit the grid's `u16` indices and
    /// are in the map (never seen: the grid holds a few percent of its cells).
    grid_spilled: bool,
    map: FxHashMap<u64, u64>,
}

impl Pairs {
    #[inline]
    pub(crate) fn get(&self, left: u32, right: u32) -> u64 {
        let (l, r) = (left as usize, right as usize);
        if l < GRID && r < GRID {
            let at = self.grid.get(l * GRID + r).copied().unwrap_or(0);
            if at != 0 || !self.grid_spilled {
                return self
                    .grid_values
                    .get(usize::from(at))
                    .copied()
                    .unwrap_or(NO_MERGE);
            }
        }
        self.map
            .get(&pair_key(left, right))
            .copied()
            .unwrap_or(NO_MERGE)
    }
}

/// The product id of a pair's value.
#[inline]
pub(crate) fn product(value: u64) -> u32 {
    value as u32
}

/// A byte-level BPE: a word's bytes start as the ids of their one-byte
/// entries; merges join adjacent ids.
pub(crate) struct ByteBpe {
    /// Internal id → the vocabulary's id (the 256 bytes first).
    unmap: Box<[u32]>,
    /// A pair listed twice keeps its last rank, as the reference's map does.
    pairs: Pairs,
    words: VocabIndex,
    scratch: ThreadScratch<Scratch>,
}

#[derive(Default)]
struct Scratch {
    /// Short words of a few tokens.
    direct: DirectCache,
    /// The rest (up to [`CACHED_WORD_MAX`] bytes).
    cache: WordCache,
    merger: Merger,
}

/// Words longer than this are merged every time: they are clauses or runs
/// that do not recur, and would crowd the cache.
const CACHED_WORD_MAX: usize = 64;

impl ByteBpe {
    /// The engine of a byte-level vocabulary: `vocab` lists each entry's raw
    /// bytes and id, `merges` each merge as `[left, right, merged]` ids in
    /// rank order. `ignore_merges`: an entry that spells a whole word is its
    /// answer (tiktoken, and `tokenizer.json` files that say so). `None`
    /// when a byte has no one-byte entry, or the tables outgrow their
    /// 32-bit offsets.
    pub(crate) fn build<'a>(
        vocab: impl Iterator<Item = (&'a [u8], u32)> + Clone,
        merges: &[[u32; 3]],
        ignore_merges: bool,
    ) -> Option<Self> {
        let mut bytes = [u32::MAX; 256];
        for (token, id) in vocab.clone() {
            if let [b] = token {
                bytes[usize::from(*b)] = id;
            }
        }
        if bytes.contains(&u32::MAX) {
            return None;
        }
        let (pairs, unmap) = internal_pairs(&bytes, merges)?;
        let entries: Vec<(&[u8], u32)> = vocab.filter(|(t, _)| t.len() >= 2).collect();
        let rebuilt: Vec<bool> = if ignore_merges {
            vec![true; entries.len()]
        } else {
            entries
                .par_iter()
                .map_init(Merger::default, |merger, &(token, id)| {
                    merger.merge(token, &pairs, &unmap) == [id]
                })
                .collect()
        };
        let words = VocabIndex::build(&entries, &rebuilt)?;
        Some(Self {
            unmap,
            pairs,
            words,
            scratch: ThreadScratch::default(),
        })
    }

    /// Appends the ids of `word` (raw bytes) to `out`.
    #[cfg(test)]
    pub(crate) fn encode_word<S: IdSink>(&self, word: &[u8], out: &mut S) {
        self.scratch
            .with(Scratch::default, |scratch| self.word(word, scratch, out));
    }

    /// Appends the ids of each `(start, end)` byte range of `text` to `out`.
    #[inline]
    pub(crate) fn encode_ranges<S: IdSink>(
        &self,
        text: &[u8],
        ranges: impl Iterator<Item = (usize, usize)>,
        out: &mut S,
    ) {
        self.scratch.with(Scratch::default, |scratch| {
            for (start, end) in ranges {
                if let Some(word) = text.get(start..end) {
                    self.word(word, scratch, out);
                }
            }
        });
    }

    /// Whether the merges alone turn `word` into the one entry that spells it.
    /// (With `ignore_merges` every entry is its word's answer, so the
    /// probe's flag cannot say this: the merge is run.)
    pub(crate) fn rebuilds(&self, word: &[u8]) -> bool {
        let key = WordKey::of(word);
        let Some((id, _)) = self.words.get(word, key, key.hash()) else {
            return false;
        };
        let mut merger = Merger::default();
        merger.merge(word, &self.pairs, &self.unmap) == [id]
    }

    #[inline(always)]
    fn word<S: IdSink>(&self, word: &[u8], scratch: &mut Scratch, out: &mut S) {
        match word {
            [] => return,
            [b] => {
                out.push_id(self.unmap[usize::from(*b)]);
                return;
            }
            _ => {}
        }
        let key = WordKey::of(word);
        let hash = key.hash();
        // The direct cache answers and keeps only words of up to 16 bytes.
        if let Some(ids) = scratch.direct.get(key, hash) {
            out.extend_ids(ids);
            return;
        }
        if let Some((id, true)) = self.words.get(word, key, hash) {
            out.push_id(id);
            scratch.direct.insert(key, hash, &[id]);
            return;
        }
        let cached = word.len() <= CACHED_WORD_MAX;
        if cached && let Some(ids) = scratch.cache.get(word, key, hash) {
            out.extend_ids(ids);
            scratch.direct.insert(key, hash, ids);
            return;
        }
        let ids = scratch.merger.merge(word, &self.pairs, &self.unmap);
        out.extend_ids(ids);
        scratch.direct.insert(key, hash, ids);
        if cached {
            scratch.cache.insert(word, key, hash, ids);
        }
    }
}

/// The merges on internal ids, and the internal → vocabulary id table.
/// `None` when there are more ids than fit 32 bits.
fn internal_pairs(bytes: &[u32; 256], merges: &[[u32; 3]]) -> Option<(Pairs, Box<[u32]>)> {
    // Vocabulary id → internal id: the bytes, then each product in the
    // rank order of its first merge.
    let mut internal: FxHashMap<u32, u32> = FxHashMap::default();
    let mut unmap: Vec<u32> = bytes.to_vec();
    for (b, &id) in bytes.iter().enumerate() {
        internal.insert(id, b as u32);
    }
    for &[_, _, merged] in merges {
        if let std::collections::hash_map::Entry::Vacant(slot) = internal.entry(merged) {
            slot.insert(u32::try_from(unmap.len()).ok()?);
            unmap.push(merged);
        }
    }
    // A merge whose part no merge makes (and is no byte) never applies.
    let mut values: FxHashMap<u64, u64> = FxHashMap::default();
    for (rank, &[left, right, merged]) in merges.iter().enumerate() {
        let (Some(&l), Some(&r), Some(&m)) = (
            internal.get(&left),
            internal.get(&right),
            internal.get(&merged),
        ) else {
            continue;
        };
        let rank = u64::from(u32::try_from(rank).ok()?);
        values.insert(pair_key(l, r), rank << 32 | u64::from(m));
    }
    let mut grid = vec![0u16; GRID * GRID].into_boxed_slice();
    let mut grid_values = vec![NO_MERGE];
    let mut grid_spilled = false;
    let mut map = FxHashMap::with_capacity_and_hasher(values.len(), Default::default());
    for (key, value) in values {
        let (l, r) = ((key >> 32) as usize, (key as u32) as usize);
        match u16::try_from(grid_values.len()) {
            Ok(at) if l < GRID && r < GRID => {
                grid[l * GRID + r] = at;
                grid_values.push(value);
            }
            at => {
                grid_spilled |= at.is_err() && l < GRID && r < GRID;
                map.insert(key, value);
            }
        }
    }
    Some((
        Pairs {
            grid,
            grid_values,
            grid_spilled,
            map,
        },
        unmap.into_boxed_slice(),
    ))
}

#[cfg(test)]
mod tests;
