//! The byte-level BPE engine: one merge by ranks for every byte-level
//! tokenizer the crate reads (`tokenizer.json` ByteLevel BPEs, tiktoken
//! encodings and rank files, Tekken, GGUF `gpt2` vocabularies).
//!
//! A word (one pre-token's bytes) is answered in this order:
//! 1. the thread's word table ([`WordTable`]): words of up to 15 bytes and
//!    three ids, seeded with every byte and every short entry that is its
//!    word's answer (the model takes entries whole, with `ignore_merges` and
//!    in tiktoken, or the merges rebuild it: decided for every entry when
//!    the engine is built, in parallel), then every short word the thread
//!    merged;
//! 2. for a longer word, the whole-word vocabulary probe ([`VocabIndex`]);
//! 3. the thread's map of the other words ([`WordCache`]: short words of
//!    more than three ids, long ones up to 64 bytes);
//! 4. the merge ([`merge`]), on internal ids ([`Pairs`]).
//!
//! Invariant *merge-is-reference*: the merge is `tokenizers` 0.x's
//! `Word::merge_all` (the adjacent pair of lowest rank, leftmost on a tie,
//! until none is listed), so every answer is the reference's; the probe and
//! the cache only remember answers the merge gave or the model defines.
//!
//! Performance notes: after a warm-up on other text, the word table
//! answers nearly every word of text seen once from its home slot, and its
//! slot is fetched a chunk ahead (see [`ByteBpe::encode_ranges`]); the merge
//! runs for the rest (2–3 % of English words), and its pair lookups are
//! where the engine waits on memory (`docs/perf/byte_engine_2026-12-03.md`).
//! Ids go straight into the caller's vector, nothing is allocated per word.
//! Short words merge by a linear scan over their pair ranks (no heap: a
//! word of a few symbols costs less to rescan than to queue); long ones (a
//! Chinese clause, a run of one character) on a heap, so time stays
//! `O(n log n)` in the word's length.

mod key;
mod merge;
mod vocab_index;
mod word_cache;
mod word_table;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::backend::thread_scratch::ThreadScratch;
use key::WordKey;
use merge::Merger;
use vocab_index::VocabIndex;
use word_cache::WordCache;
use word_table::{Found, INLINE_IDS, NOT_SHORT, SHORT_MAX, WordTable};

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
    /// Entries by their bytes: the answer to a long word that spells one.
    words: VocabIndex,
    /// Every byte and every short entry that is its word's answer: each
    /// thread's [`WordTable`] starts as a copy.
    seed: WordTable,
    scratch: ThreadScratch<Scratch>,
}

struct Scratch {
    table: WordTable,
    /// Short words of more than [`INLINE_IDS`] ids, and long words (up to
    /// [`CACHED_WORD_MAX`] bytes).
    cache: WordCache,
    merger: Merger,
    pending: Vec<Pending>,
    /// Ids of a chunk's hits, before they go out together
    /// ([`CHUNK`] × [`INLINE_IDS`]).
    ids: Box<[u32]>,
}

/// A pre-token waiting for its lookup: its key and hash (taken while the
/// chunk is gathered, so its slot can be fetched early) and its bytes.
#[derive(Clone, Copy, Default)]
struct Pending {
    key: u128,
    hash: u64,
    start: u32,
    end: u32,
}

/// Pre-tokens gathered before their lookups: a chunk's slots are prefetched
/// as it is gathered, hundreds of cycles before they are read.
const CHUNK: usize = 256;

/// How many words ahead of its lookup a slot is asked into L1.
const AHEAD: usize = 16;

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
        let byte_words: Vec<[u8; 1]> = (0..=255u8).map(|b| [b]).collect();
        let seed_words: Vec<(&[u8], u32)> = byte_words
            .iter()
            .zip(bytes)
            .map(|(b, id)| (&b[..], id))
            .chain(
                entries
                    .iter()
                    .zip(&rebuilt)
                    .filter(|&(&(t, _), &r)| r && t.len() <= SHORT_MAX)
                    .map(|(&e, _)| e),
            )
            .collect();
        // Two tables of megabytes each, built side by side.
        let (seed, words) = rayon::join(
            || WordTable::seeded(seed_words.into_iter()),
            || VocabIndex::build(&entries, &rebuilt),
        );
        let (seed, words) = (seed?, words?);
        Some(Self {
            unmap,
            pairs,
            words,
            seed,
            scratch: ThreadScratch::default(),
        })
    }

    fn fresh_scratch(&self) -> Scratch {
        Scratch {
            table: self.seed.clone(),
            cache: WordCache::default(),
            merger: Merger::default(),
            pending: Vec::with_capacity(CHUNK + AHEAD),
            ids: vec![0; CHUNK * INLINE_IDS].into_boxed_slice(),
        }
    }

    /// Appends the ids of `word` (raw bytes) to `out`.
    #[cfg(test)]
    pub(crate) fn encode_word<S: IdSink>(&self, word: &[u8], out: &mut S) {
        self.encode_ranges(word, std::iter::once((0, word.len())), out);
    }

    /// Appends the ids of each `(start, end)` byte range of `text` to `out`.
    ///
    /// Performance notes: the ranges are gathered in chunks of [`CHUNK`],
    /// each with its key and hash, and its slot is prefetched; the lookups
    /// follow, a slot asked into L1 [`AHEAD`] words before it is read. A
    /// hit (nearly every word) copies the slot's ids whether or not it hits
    /// and advances the output by their count only on a hit: no branch on
    /// the word's length or id count.
    pub(crate) fn encode_ranges<S: IdSink>(
        &self,
        text: &[u8],
        ranges: impl Iterator<Item = (usize, usize)>,
        out: &mut S,
    ) {
        self.scratch.with(
            || self.fresh_scratch(),
            |scratch| {
                let mut pending = std::mem::take(&mut scratch.pending);
                pending.clear();
                for (start, end) in ranges {
                    if start >= end || end > text.len() || end > u32::MAX as usize {
                        continue;
                    }
                    let key = if end - start <= SHORT_MAX {
                        word_table::short_key(text, start, end)
                    } else {
                        NOT_SHORT
                    };
                    let hash = word_table::hash(key);
                    word_table::prefetch(scratch.table.home_ptr(hash), false);
                    pending.push(Pending {
                        key,
                        hash,
                        start: start as u32,
                        end: end as u32,
                    });
                    if pending.len() == CHUNK {
                        self.lookups(text, &pending, scratch, out);
                        pending.clear();
                    }
                }
                self.lookups(text, &pending, scratch, out);
                scratch.pending = pending;
            },
        );
    }

    /// The ids of a chunk's words, in order (see [`Self::encode_ranges`]).
    #[inline(never)]
    fn lookups<S: IdSink>(
        &self,
        text: &[u8],
        pending: &[Pending],
        scratch: &mut Scratch,
        out: &mut S,
    ) {
        let mut ids = std::mem::take(&mut scratch.ids);
        for p in pending.iter().take(AHEAD) {
            word_table::prefetch(scratch.table.home_ptr(p.hash), true);
        }
        let mut written = 0;
        for (i, p) in pending.iter().enumerate() {
            if let Some(ahead) = pending.get(i + AHEAD) {
                word_table::prefetch(scratch.table.home_ptr(ahead.hash), true);
            }
            let home = scratch.table.home(p.hash);
            if let (Some(slot), Some(to)) = (
                scratch.table.slot(home),
                ids.get_mut(written..written + INLINE_IDS),
            ) {
                to.copy_from_slice(slot.ids());
                if slot.holds(p.key) {
                    written += slot.count();
                    continue;
                }
            }
            out.extend_ids(ids.get(..written).unwrap_or_default());
            written = 0;
            let word = text
                .get(p.start as usize..p.end as usize)
                .unwrap_or_default();
            self.slow_word(word, *p, scratch, out);
        }
        out.extend_ids(ids.get(..written).unwrap_or_default());
        scratch.ids = ids;
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

    /// A word its home slot does not answer: a short word past its home
    /// or new to the thread, or a long word.
    #[inline(never)]
    fn slow_word<S: IdSink>(&self, word: &[u8], p: Pending, scratch: &mut Scratch, out: &mut S) {
        if p.key != NOT_SHORT {
            let vacant = match scratch.table.find(p.key, p.hash) {
                Found::At(at) => {
                    if let Some(slot) = scratch.table.slot(at) {
                        out.extend_ids(slot.ids().get(..slot.count()).unwrap_or_default());
                    }
                    return;
                }
                Found::Vacant(at) => at,
            };
            // Not in the table: the seed holds every entry that answers
            // its word, so the word is a merge (or one of more ids than a
            // slot holds, in the word cache).
            let key = WordKey::of(word);
            let hash = key.hash();
            if let Some(ids) = scratch.cache.get(word, key, hash) {
                out.extend_ids(ids);
                return;
            }

            let ids = scratch.merger.merge(word, &self.pairs, &self.unmap);
            out.extend_ids(ids);
            if ids.len() <= INLINE_IDS {
                scratch.table.insert(vacant, p.key, ids, &self.seed);
            } else {
                scratch.cache.insert(word, key, hash, ids);
            }
            return;
        }
        let key = WordKey::of(word);
        let hash = key.hash();
        if let Some((id, true)) = self.words.get(word, key, hash) {
            out.push_id(id);
            return;
        }
        let cached = word.len() <= CACHED_WORD_MAX;
        if cached && let Some(ids) = scratch.cache.get(word, key, hash) {
            out.extend_ids(ids);
            return;
        }
        let ids = scratch.merger.merge(word, &self.pairs, &self.unmap);
        out.extend_ids(ids);
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
