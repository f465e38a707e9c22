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
//!    more than three ids, long ones up to 256 bytes);
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
//! where the engine waits on memory: a chunk's new words merge side by
//! side so those waits overlap, and the tables are on huge pages so they
//! are not also page walks (`docs/perf/byte_engine_2026-12-03.md`).
//! Ids go straight into the caller's vector, nothing is allocated per word.
//! Short words merge by a linear scan over their pair ranks (no heap: a
//! word of a few symbols costs less to rescan than to queue); long ones (a
//! Chinese clause, a run of one character) on a heap, so time stays
//! `O(n log n)` in the word's length.

mod atoms;
mod key;
mod merge;
mod pair_table;
mod vocab_index;
mod word_cache;
mod word_table;

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::backend::huge_pages::HugeBox;
use crate::backend::prefetch::prefetch;
use crate::backend::thread_scratch::ThreadScratch;
use atoms::Atoms;
use key::WordKey;
use merge::Merger;
use pair_table::PairTable;
use vocab_index::VocabIndex;
use word_cache::WordCache;
use word_table::{Found, INLINE_IDS, NOT_SHORT, SHORT_MAX, WordTable};

/// Where the engine writes ids: the crate's `Vec<u32>` or `tokenizers`'
/// `Vec<PipelineToken>` (the `tokenizer.json` walk's buffer).
pub(crate) trait IdSink {
    fn extend_ids(&mut self, ids: &[u32]);
}

impl IdSink for Vec<u32> {
    #[inline]
    fn extend_ids(&mut self, ids: &[u32]) {
        self.extend_from_slice(ids);
    }
}

impl IdSink for Vec<tokenizers::pipeline::PipelineToken> {
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
pub(crate) const NO_MERGE: u32 = u32::MAX;

/// Side of the dense grid of pairs of small internal ids: 4 MiB on two
/// huge pages. At 1024 it answers 80 % of a new code word's lookups
/// (cl100k, `corpus/code`), at 512 70 %: 1.02× cl100k code seen once,
/// 1.01× Llama-3, over 512 on huge pages (on small pages 1024 measured
/// 0.97×).
const GRID: usize = 1024;

/// Bits of a merge's code below its product: a product may be the result
/// of at most `1 << SUB_BITS` merges, in ranks that no other product's
/// first merge falls between.
const SUB_BITS: u32 = 7;

/// The merges on internal ids: `(left, right)` → the merge's *code*,
/// `internal id of the product << SUB_BITS | rank - the product's first
/// rank` ([`NO_MERGE`] for none).
///
/// Invariant *code-orders-as-rank*: internal ids number the products in
/// the rank order of their first merges, and the build checks that the
/// codes, taken in rank order, increase (every merge list of the shared
/// tokenizers passes: a product's merges are contiguous in it). So
/// comparing two codes compares their ranks, and a code names its product
/// with no second lookup.
///
/// Performance notes: a word seen once is merged from its bytes, and each
/// merge step looks up two pairs; a map of every pair (280,000 for
/// Llama-3, megabytes) misses the cache on each. Pairs of two small ids
/// (the frequent merges, by the id order) are read from a grid of codes
/// ([`GRID`]) instead, the rest from the map. A merged word's ids are
/// written in the vocabulary's through `vocabulary`.
pub(crate) struct Pairs {
    grid: HugeBox<u32>,
    map: PairTable,
    /// Internal id → vocabulary id.
    vocabulary: Box<[u32]>,
}

impl Pairs {
    /// The merge code of `left` then `right`, or [`NO_MERGE`].
    #[inline]
    pub(crate) fn get(&self, left: u32, right: u32) -> u32 {
        let (l, r) = (left as usize, right as usize);
        if l < GRID && r < GRID {
            return self.grid.get(l * GRID + r).copied().unwrap_or(NO_MERGE);
        }
        self.map.get(pair_key(left, right))
    }

    /// Asks for the line that [`Pairs::get`] of this pair will read: a
    /// hint, nothing is read.
    #[inline]
    pub(crate) fn prefetch(&self, left: u32, right: u32) {
        let (l, r) = (left as usize, right as usize);
        if l < GRID && r < GRID {
            prefetch(self.grid.as_ptr().wrapping_add(l * GRID + r), true);
        } else {
            self.map.prefetch(pair_key(left, right));
        }
    }

    /// The vocabulary id of an internal id.
    #[inline]
    pub(crate) fn vocabulary(&self, internal: u32) -> u32 {
        self.vocabulary
            .get(internal as usize)
            .copied()
            .unwrap_or(u32::MAX)
    }
}

/// The internal id of a merge code's product.
#[inline]
pub(crate) fn product(code: u32) -> u32 {
    code >> SUB_BITS
}

/// A byte-level BPE: a word's bytes start as the ids of their one-byte
/// entries; merges join adjacent ids.
pub(crate) struct ByteBpe {
    /// Internal id → the vocabulary's id (the 256 bytes first).
    /// A pair listed twice keeps its last rank, as the reference's map does.
    pairs: Pairs,
    /// The chars a merge starts from whole.
    atoms: Option<Atoms>,
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
    /// A chunk's words ([`CHUNK`]).
    pending: Box<[Pending]>,
    /// A chunk's words that their home slots did not answer.
    misses: Vec<Miss>,
    /// Their answers (each miss's `span`).
    answers: Vec<u32>,
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

/// A word its home slot did not answer: where its ids go among the
/// chunk's hits, and their span of `Scratch::answers` once resolved.
#[derive(Clone, Copy)]
struct Miss {
    word: Pending,
    at: u32,
    span: (u32, u32),
}

/// Keeps a miss for [`ByteBpe::resolve`]: out of line, so the lookups'
/// loop keeps its registers. A short word past its `home` slot is found,
/// or placed, further along its chain, and a new one's merge starts by
/// looking up its byte pairs: those lines are asked for now, while the
/// chunk's other lookups run. (A long word is mostly the word cache's.)
#[cold]
#[inline(never)]
fn defer(
    misses: &mut Vec<Miss>,
    word: Pending,
    written: usize,
    text: &[u8],
    pairs: &Pairs,
    slots: &[word_table::Slot],
    home: usize,
) {
    if word.key != NOT_SHORT {
        prefetch(slots.as_ptr().wrapping_add((home | 1) + 1), true);
        let bytes = text
            .get(word.start as usize..word.end as usize)
            .unwrap_or_default();
        for pair in bytes.windows(2).take(PREFETCHED_PAIRS) {
            pairs.prefetch(u32::from(pair[0]), u32::from(pair[1]));
        }
    }
    misses.push(Miss {
        word,
        at: written as u32,
        span: (0, 0),
    });
}

/// Fills `pending` with the next words of `ranges` (at most [`CHUNK`]),
/// each with its key and hash, and asks for each one's home slot; the
/// count gathered (under [`CHUNK`]: the ranges are done). A loop of its
/// own, with no call in it, so its state stays in registers.
#[inline(never)]
fn gather<I: Iterator<Item = (usize, usize)>>(
    text: &[u8],
    mut ranges: I,
    homes: word_table::Homes,
    pending: &mut [Pending],
) -> (usize, I) {
    let mut n = 0;
    while let Some(p) = pending.get_mut(n) {
        let (start, end) = loop {
            match ranges.next() {
                None => return (n, ranges),
                Some((start, end))
                    if start < end && end <= text.len() && end <= u32::MAX as usize =>
                {
                    break (start, end);
                }
                Some(_) => {}
            }
        };
        let key = if end - start <= SHORT_MAX {
            word_table::short_key(text, start, end)
        } else {
            NOT_SHORT
        };
        let hash = word_table::hash(key);
        prefetch(homes.home_ptr(hash), true);
        *p = Pending {
            key,
            hash,
            start: start as u32,
            end: end as u32,
        };
        n += 1;
    }
    (n, ranges)
}

impl Miss {
    fn bytes<'t>(&self, text: &'t [u8]) -> &'t [u8] {
        text.get(self.word.start as usize..self.word.end as usize)
            .unwrap_or_default()
    }
}

/// Pre-tokens gathered before their lookups: a chunk's slots are fetched
/// into L1 as it is gathered, hundreds of cycles before they are read. (256
/// lines, a third of a 48 KiB L1: 2–3 % faster than 512 words a chunk on
/// an Intel Xeon, where 512 had measured best on an AMD EPYC with a 32 KiB
/// L1; fetched into L2 with a second fetch into L1 16 words ahead of each
/// lookup, no faster on either.)
const CHUNK: usize = 256;

/// The byte pairs of a missed word whose lines [`defer`] asks for.
const PREFETCHED_PAIRS: usize = 8;

/// Words longer than this are merged every time: they are clauses or runs
/// that do not recur, and would crowd the cache. (Code's rule lines, 65
/// to 256 bytes of `/`, `-` or `*`, recur: merged on a heap each time they
/// cost about 1.5 % of encoding `corpus/code`.)
const CACHED_WORD_MAX: usize = 256;

impl ByteBpe {
    /// The engine of a byte-level vocabulary: `vocab` lists each entry's raw
    /// bytes and id, `merges` each merge as `[left, right, merged]` ids in
    /// rank order. `ignore_merges`: an entry that spells a whole word is its
    /// answer (tiktoken, and `tokenizer.json` files that say so). `None`
    /// when a byte has no one-byte entry, the merges' codes cannot order as
    /// their ranks (invariant *code-orders-as-rank*), or the tables outgrow
    /// their 32-bit offsets: the caller's general path then encodes.
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
        let (pairs, operand_min) = internal_pairs(&bytes, merges)?;
        let entries: Vec<(&[u8], u32)> = vocab.filter(|(t, _)| t.len() >= 2).collect();
        let rebuilt: Vec<bool> = if ignore_merges {
            vec![true; entries.len()]
        } else {
            entries
                .par_iter()
                .map_init(Merger::default, |merger, &(token, id)| {
                    merger.merge(token, &pairs, None) == [id]
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
        let atoms = Atoms::build(&entries, &pairs, &operand_min);
        Some(Self {
            atoms,
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
            pending: vec![Pending::default(); CHUNK].into_boxed_slice(),
            misses: Vec::new(),
            answers: Vec::new(),
            ids: vec![0; CHUNK * INLINE_IDS].into_boxed_slice(),
        }
    }

    /// Appends the ids of `word` (raw bytes) to `out`.
    #[cfg(test)]
    pub(crate) fn encode_word<S: IdSink>(&self, word: &[u8], out: &mut S) {
        self.encode_ranges(word, std::iter::once((0, word.len())), out);
    }

    /// Appends the ids of each pre-token span of `text` to `out`.
    pub(crate) fn encode_spans<S: IdSink>(
        &self,
        text: &[u8],
        spans: &[tokenizers::pipeline::Span],
        out: &mut S,
    ) {
        let ranges = spans.iter().map(|s| {
            let r = s.range();
            (r.start, r.end)
        });
        self.encode_ranges(text, ranges, out);
    }

    /// Appends the ids of each `(start, end)` byte range of `text` to `out`.
    ///
    /// Performance notes: the ranges are gathered in chunks of [`CHUNK`],
    /// each with its key and hash, and its slot is asked into L1; the
    /// lookups follow. A hit (nearly every word) copies the slot's ids
    /// whether or not it hits and advances the output by their count only
    /// on a hit: no branch on the word's length or id count. The chunk's
    /// misses are set aside and resolved after its lookups
    /// ([`Self::resolve`]), so the lookups' loop keeps its registers, and
    /// their ids are spliced in where they belong.
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
                let mut ranges = ranges;
                loop {
                    let n;
                    (n, ranges) = gather(text, ranges, scratch.table.homes(), &mut pending);
                    let chunk = pending.get(..n).unwrap_or_default();
                    self.lookups(text, chunk, scratch, out);
                    if n < CHUNK {
                        break;
                    }
                }
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
        let mut misses = std::mem::take(&mut scratch.misses);
        misses.clear();
        let mut written = 0;
        // The table does not change before the misses are resolved: its
        // slots and shift stay in registers.
        let (slots, shift) = scratch.table.view();
        for p in pending {
            let home = (p.hash >> shift) as usize;
            if let (Some(slot), Some(to)) =
                (slots.get(home), ids.get_mut(written..written + INLINE_IDS))
            {
                to.copy_from_slice(slot.ids());
                if slot.holds(p.key) {
                    written += slot.count();
                    continue;
                }
            }
            defer(&mut misses, *p, written, text, &self.pairs, slots, home);
        }
        if misses.is_empty() {
            out.extend_ids(ids.get(..written).unwrap_or_default());
        } else {
            self.resolve(text, &mut misses, scratch);
            let mut from = 0;
            for m in &misses {
                let at = m.at as usize;
                out.extend_ids(ids.get(from..at).unwrap_or_default());
                out.extend_ids(
                    scratch
                        .answers
                        .get(m.span.0 as usize..m.span.1 as usize)
                        .unwrap_or_default(),
                );
                from = at;
            }
            out.extend_ids(ids.get(from..written).unwrap_or_default());
        }
        scratch.ids = ids;
        scratch.misses = misses;
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
        merger.merge(word, &self.pairs, None) == [id]
    }

    /// The answers of a chunk's words that their home slots did not give,
    /// into `scratch.answers` (each miss's `span`): those the thread's
    /// caches or the vocabulary hold, else the merge's, which the caches
    /// then learn.
    #[inline(never)]
    fn resolve(&self, text: &[u8], misses: &mut [Miss], scratch: &mut Scratch) {
        let mut answers = std::mem::take(&mut scratch.answers);
        answers.clear();
        // Long words met before first, in a loop of lookups only: each one's
        // probe of the word cache is independent of the last, so their
        // misses overlap. (An answer's place in `answers` is its span's.)
        for m in misses.iter_mut() {
            let word = m.bytes(text);
            if m.word.key != NOT_SHORT || word.len() > CACHED_WORD_MAX {
                continue;
            }
            let key = WordKey::of(word);
            if let Some(ids) = scratch.cache.get(word, key, key.hash()) {
                let from = answers.len();
                answers.extend_from_slice(ids);
                m.span = (from as u32, answers.len() as u32);
            }
        }
        for m in misses.iter_mut() {
            // Answered above (every answer has an id).
            if m.span.1 > m.span.0 {
                continue;
            }
            let word = m.bytes(text);
            let from = answers.len();
            if let Err(Unknown(vacancy)) = self.known(word, m.word, scratch, &mut answers) {
                scratch
                    .merger
                    .merge_into(word, &self.pairs, self.atoms.as_ref(), &mut answers);
                Self::learn(word, m.word, vacancy, &answers[from..], scratch, &self.seed);
            }
            m.span = (from as u32, answers.len() as u32);
        }
        scratch.answers = answers;
    }

    /// Appends the answer the thread's caches or the vocabulary hold for
    /// `word` (a home-slot miss) to `answers`, or says it must be merged.
    fn known(
        &self,
        word: &[u8],
        p: Pending,
        scratch: &mut Scratch,
        answers: &mut Vec<u32>,
    ) -> Result<(), Unknown> {
        if p.key != NOT_SHORT {
            // The seed holds every entry that answers its word, so a word
            // not in the table is a merge; one of more ids than a slot
            // holds is marked there as the word cache's.
            let at = match scratch.table.find(p.key, p.hash) {
                Found::At(at) => at,
                Found::Vacant(at) => return Err(Unknown(Some(at))),
            };
            let Some(slot) = scratch.table.slot(at) else {
                return Err(Unknown(None));
            };
            if !slot.in_cache() {
                answers.extend_from_slice(slot.ids().get(..slot.count()).unwrap_or_default());
                return Ok(());
            }
            let key = WordKey::of(word);
            return match scratch.cache.get(word, key, key.hash()) {
                Some(ids) => {
                    answers.extend_from_slice(ids);
                    Ok(())
                }
                None => Err(Unknown(None)),
            };
        }
        // A long word met before is the cache's (most are); one that is a
        // vocabulary entry is the index's the first time.
        let key = WordKey::of(word);
        let hash = key.hash();
        if word.len() <= CACHED_WORD_MAX
            && let Some(ids) = scratch.cache.get(word, key, hash)
        {
            answers.extend_from_slice(ids);
            return Ok(());
        }
        if let Some((id, true)) = self.words.get(word, key, hash) {
            answers.push(id);
            return Ok(());
        }
        Err(Unknown(None))
    }

    /// Keeps a merged word's answer: a short word's in the word table at
    /// `vacancy` (nothing has changed the table since [`Self::known`] gave
    /// it), its ids or, past [`INLINE_IDS`], the mark that the word cache
    /// holds them; the word cache keeps those and long words (up to
    /// [`CACHED_WORD_MAX`] bytes).
    fn learn(
        word: &[u8],
        p: Pending,
        vacancy: Option<usize>,
        ids: &[u32],
        scratch: &mut Scratch,
        seed: &WordTable,
    ) {
        let short = p.key != NOT_SHORT;
        if short && let Some(at) = vacancy {
            scratch.table.insert(at, p.key, ids, seed);
        }
        if (short && ids.len() <= INLINE_IDS) || word.len() > CACHED_WORD_MAX {
            return;
        }
        let key = WordKey::of(word);
        let hash = key.hash();
        if scratch.cache.get(word, key, hash).is_none() {
            scratch.cache.insert(word, key, hash, ids);
        }
    }
}

/// A word [`ByteBpe::known`] could not answer: it is merged, and
/// [`ByteBpe::learn`] keeps it at the word table's vacancy, if any.
struct Unknown(Option<usize>);

/// The merges on internal ids. `None` when the codes do not order as the
/// ranks (invariant *code-orders-as-rank*) or an id outgrows a code.
fn internal_pairs(bytes: &[u32; 256], merges: &[[u32; 3]]) -> Option<(Pairs, Vec<u32>)> {
    // A merge whose part no merge makes (and is no byte) never applies. A
    // pair listed twice keeps its last rank, as the reference's map does.
    let mut made: FxHashSet<u32> = bytes.iter().copied().collect();
    made.extend(merges.iter().map(|m| m[2]));
    let mut ranks: FxHashMap<(u32, u32), (u32, u32)> = FxHashMap::default();
    for (rank, &[left, right, merged]) in merges.iter().enumerate() {
        if made.contains(&left) && made.contains(&right) {
            ranks.insert((left, right), (u32::try_from(rank).ok()?, merged));
        }
    }
    let mut kept: Vec<(u32, u32, (u32, u32))> = ranks
        .into_iter()
        .map(|(pair, (r, m))| (r, m, pair))
        .collect();
    kept.sort_unstable();
    // Vocabulary id → internal id: the bytes, then each product in the
    // rank order of its first merge (`first`: that rank).
    let mut internal: FxHashMap<u32, (u32, u32)> = FxHashMap::default();
    let mut vocabulary: Vec<u32> = bytes.to_vec();
    for (b, &id) in bytes.iter().enumerate() {
        internal.insert(id, (b as u32, 0));
    }
    for &(rank, merged, _) in &kept {
        let next = vocabulary.len() as u32;
        if let std::collections::hash_map::Entry::Vacant(slot) = internal.entry(merged) {
            slot.insert((next, rank));
            vocabulary.push(merged);
        }
    }
    if vocabulary.len() as u64 > u64::from(NO_MERGE >> SUB_BITS) {
        return None;
    }
    let mut codes = Vec::with_capacity(kept.len());
    // Each internal id's lowest code as an operand (for the atoms).
    let mut operand_min = vec![NO_MERGE; vocabulary.len()];
    let mut last = None;
    for &(rank, merged, (left, right)) in &kept {
        let (Some(&(l, _)), Some(&(r, _)), Some(&(m, first))) = (
            internal.get(&left),
            internal.get(&right),
            internal.get(&merged),
        ) else {
            continue;
        };
        let sub = rank.checked_sub(first)?;
        if sub >> SUB_BITS != 0 {
            return None;
        }
        let code = m << SUB_BITS | sub;
        if last.is_some_and(|last| last >= code) {
            return None;
        }
        last = Some(code);
        for side in [l, r] {
            if let Some(min) = operand_min.get_mut(side as usize) {
                *min = (*min).min(code);
            }
        }
        codes.push((pair_key(l, r), code));
    }
    let mut grid = HugeBox::filled(GRID * GRID, NO_MERGE);
    let mut map = Vec::with_capacity(codes.len());
    for (key, code) in codes {
        let (l, r) = ((key >> 32) as usize, (key as u32) as usize);
        match grid.get_mut(l * GRID + r) {
            Some(cell) if l < GRID && r < GRID => *cell = code,
            _ => map.push((key, code)),
        }
    }
    let pairs = Pairs {
        grid,
        map: PairTable::new(&map),
        vocabulary: vocabulary.into_boxed_slice(),
    };
    Some((pairs, operand_min))
}

#[cfg(test)]
mod tests;
