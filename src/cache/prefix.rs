//! The L1 prefix cache: the longest cached text that shares a prefix with a
//! prompt seeds a LoPT merge, so only the text past an overlap before the
//! shared prefix's end is encoded (DESIGN.md, invariants `cache-transparent` and `caches-bounded`).
//!
//! An entry is one encoded text. When it was encoded from another entry's
//! ids (the next turn of a conversation), it holds that entry (an `Arc`)
//! and only what it adds: the text past the bytes the two share and the
//! ids past the cut, so storing turn `k + 1` copies turn `k + 1`'s part,
//! not the whole prompt. It also holds the ids, spans and pre-token
//! boundaries of its last bytes (its window, in text coordinates), which
//! seed the next merge. It is keyed by its last full block boundary `x`
//! and a hash of the block ending there, so a lookup probes one key per
//! block boundary of the prompt, longest first, hashing one block per
//! probe. A probe's ids are used only after the entry's bytes are compared
//! with the prompt's over the whole shared prefix, piece by piece along the
//! chain (a collision is a miss, never wrong ids); on a long prefix that
//! comparison runs on a second thread while the new text is encoded.

use std::hash::Hasher;
use std::sync::Arc;

use moka::policy::EvictionPolicy;
use rustc_hash::FxHasher;

use std::sync::atomic::Ordering;

use super::{NEXT_IDENTITY, PromptCacheOptions, bounded};
use crate::backend;
use crate::encode::parallel::{ParallelEncoder, Seed, Windowed};
use crate::encode::{ChunkEncoding, SplitSpec, split};
use crate::encoding::{Encoding, EncodingBuilder};
use crate::error::{Error, Result};
use crate::metrics::{CacheMetrics, Labels};

/// How far back from the shared prefix's end an allowed edge is searched
/// for (bytes); past it the entry is not used.
const EDGE_SEARCH_BYTES: usize = 1024;

/// Bytes past a block the stored window reaches back, for an edge found
/// that far before the shared prefix's end (a seed cut further back gets a
/// shorter overlap, or none).
const EDGE_MARGIN_BYTES: usize = 256;

/// Bytes charged per entry beyond its text, ids and window.
const ENTRY_OVERHEAD: usize = 160;

/// Longest chain of entries sharing their prefixes: an entry that would be
/// deeper is stored whole (its text and ids copied), so a lookup walks at
/// most this many pieces and dropping an entry recurses at most this deep.
const MAX_DEPTH: u32 = 32;

/// Smallest block size: below it the per-block probe costs more than the
/// bytes it could save.
pub(crate) const MIN_BLOCK_BYTES: usize = 64;

/// One cached encoding.
pub(crate) struct L1Entry {
    /// The entry whose first `text_base` bytes and `ids_base` ids this
    /// one's text and ids start with (`None`: both bases are 0).
    parent: Option<Arc<L1Entry>>,
    text_base: usize,
    ids_base: usize,
    /// The text past `text_base` and the ids past `ids_base`.
    text: Box<[u8]>,
    ids: Box<[u32]>,
    /// Whole text length and id count.
    len: usize,
    n_ids: usize,
    /// The flags it was encoded under (compared on every match, like the bytes).
    flags: u8,
    /// Ids, spans and boundaries of its last tokens (`tail_first` 0), and
    /// the index of the first of them among all its ids.
    window: ChunkEncoding,
    window_first: usize,
    /// Links to the root (0 for a whole entry).
    depth: u32,
    /// Bytes this entry keeps alive: its own parts and its parent's weight.
    weight: usize,
}

impl L1Entry {
    fn weight(&self) -> usize {
        self.weight
    }

    /// The pieces of the text's first `limit` bytes, from the root: each
    /// with its text position.
    fn text_parts(&self, limit: usize) -> Vec<(usize, &[u8])> {
        let mut parts = Vec::with_capacity(self.depth as usize + 1);
        let mut end = limit.min(self.len);
        let mut e = self;
        loop {
            if end > e.text_base {
                parts.push((
                    e.text_base,
                    e.text.get(..end - e.text_base).unwrap_or(&e.text),
                ));
                end = e.text_base;
            }
            match &e.parent {
                Some(p) if end > 0 => e = p,
                _ => break,
            }
        }
        parts.reverse();
        parts
    }

    /// Appends ids `[lo, hi)` to `out`, piece by piece.
    fn extend_ids(&self, lo: usize, hi: usize, out: &mut Vec<u32>) {
        let mut parts = Vec::with_capacity(self.depth as usize + 1);
        let mut end = hi.min(self.n_ids);
        let mut e = self;
        while end > lo {
            if end > e.ids_base {
                let from = lo.max(e.ids_base) - e.ids_base;
                parts.push(e.ids.get(from..end - e.ids_base).unwrap_or_default());
                end = e.ids_base;
            }
            match &e.parent {
                Some(p) => e = p,
                None => break,
            }
        }
        for part in parts.iter().rev() {
            out.extend_from_slice(part);
        }
    }

    /// How many bytes the text shares with `t` from the start, compared
    /// byte for byte over every piece from `from` on (the bytes before
    /// `from` taken as equal: [`Self::same_before`] checks them).
    fn agreement_from(&self, t: &[u8], from: usize) -> usize {
        for (start, part) in self.text_parts(self.len) {
            let end = start + part.len();
            if end <= from {
                continue;
            }
            let skip = from.saturating_sub(start);
            let rest = t.get(start + skip..).unwrap_or_default();
            let c = common_prefix(&part[skip..], rest);
            if skip + c < part.len() {
                return start + skip + c;
            }
        }
        self.len
    }

    /// Whether the text's first `upto` bytes equal `t`'s.
    fn same_before(&self, t: &[u8], upto: usize) -> bool {
        let upto = upto.min(self.len);
        t.len() >= upto
            && self
                .text_parts(upto)
                .iter()
                .all(|&(start, part)| t.get(start..start + part.len()) == Some(part))
    }

    /// A copy of the text's bytes `[lo, hi)`.
    fn excerpt(&self, lo: usize, hi: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(hi.saturating_sub(lo));
        for (start, part) in self.text_parts(hi) {
            let end = start + part.len();
            if end > lo {
                out.extend_from_slice(&part[lo.saturating_sub(start)..]);
            }
        }
        out
    }

    /// The window as a seed cut at `agree`.
    fn seed(&self, agree: usize) -> Seed<'_> {
        Seed {
            enc: &self.window,
            first: self.window_first,
            agree,
        }
    }
}

/// A cached entry whose text agrees with the prompt on its first `agree`
/// bytes, of which the first `unchecked` are not compared yet.
pub(crate) struct Found {
    pub(crate) entry: Arc<L1Entry>,
    pub(crate) agree: usize,
    pub(crate) unchecked: usize,
}

/// How an encode through the cache ended.
enum Speculated {
    Done(Encoding),
    /// The bytes before the probed block differ from the entry's: nothing
    /// was counted or stored.
    Differed,
}

/// One handle's L1 cache.
pub(crate) struct L1Cache {
    map: moka::sync::Cache<u128, Arc<L1Entry>>,
    block: usize,
    min_bytes: usize,
    identity: u64,
    metrics: CacheMetrics,
}

impl L1Cache {
    /// `None` when the options turn it off.
    pub(crate) fn new(options: &PromptCacheOptions, labels: &Labels) -> Option<Self> {
        if options.l1_bytes == 0 {
            return None;
        }
        let metrics = CacheMetrics::l1(labels);
        // LRU, not TinyLFU: a conversation's next turn extends the prompt
        // stored last, which has been seen once.
        let map = bounded(
            options.l1_bytes,
            L1Entry::weight,
            EvictionPolicy::lru(),
            metrics.clone(),
        );
        Some(Self {
            map,
            block: options.l1_block_bytes.max(MIN_BLOCK_BYTES),
            min_bytes: options.l1_min_bytes,
            identity: NEXT_IDENTITY.fetch_add(1, Ordering::Relaxed),
            metrics,
        })
    }

    /// Whether `text` goes through the cache at all.
    #[inline]
    pub(crate) fn applies(&self, text: &str) -> bool {
        text.len() >= self.min_bytes.max(self.block)
    }

    /// The key of `text`'s block boundary `x` (a multiple of the block size,
    /// at most `text.len()`): a hash of the identity, `flags`, `x` and the
    /// block that ends at `x`, with `x` itself in the low bits. Only that
    /// block is hashed; the bytes before it are compared on every match.
    fn key(&self, text: &[u8], flags: u8, x: usize) -> u128 {
        let mut h = FxHasher::with_seed(0x51_7CC1_B727_220A);
        h.write_u64(self.identity);
        h.write_u8(flags);
        h.write_usize(x);
        h.write(&text[x - self.block..x]);
        (u128::from(h.finish()) << 64) | x as u128
    }

    /// The cached entry sharing the longest block-aligned prefix with `text`,
    /// and how many bytes the two share. Probes one key per block boundary,
    /// longest first. A probe at `x` compares the bytes from the block that
    /// ends at `x` on (from the start of the entry's own piece, if that is
    /// earlier); the bytes before are compared too, unless `defer`, when
    /// they are left to the caller (`Found::unchecked`).
    pub(crate) fn lookup(&self, text: &str, flags: u8, defer: bool) -> Option<Found> {
        let t = text.as_bytes();
        let mut x = t.len() / self.block * self.block;
        while x > 0 {
            if let Some(entry) = self.map.get(&self.key(t, flags, x))
                && entry.flags == flags
                && entry.len >= x
            {
                // A chained entry's own piece is compared whole: a sibling
                // (another continuation of the same parent) differs there.
                let from = match entry.parent {
                    Some(_) => (x - self.block).min(entry.text_base),
                    None => x - self.block,
                };
                let agree = entry.agreement_from(t, from);
                if agree >= x && (defer || entry.same_before(t, from)) {
                    let unchecked = if defer { from } else { 0 };
                    return Some(Found {
                        entry,
                        agree,
                        unchecked,
                    });
                }
            }
            x -= self.block;
        }
        None
    }

    /// Stores the encoding of `text` under its last full block boundary:
    /// as an extension of `parent` (whose first `text_base` bytes the text
    /// shares and whose first `out.seed_ids` ids it starts with) when that
    /// chain is short and shares at least half of the parent's text, else
    /// whole, with `all_ids` (every id) copied.
    fn store(
        &self,
        text: &str,
        flags: u8,
        parent: Option<(&Arc<L1Entry>, usize)>,
        out: Windowed,
        all_ids: &[u32],
    ) {
        let x = text.len() / self.block * self.block;
        if x == 0 {
            return;
        }
        let link = parent.filter(|&(p, text_base)| {
            out.seed_ids > 0 && p.depth < MAX_DEPTH && 2 * text_base >= p.len
        });
        let (parent, text_base, ids_base, ids, depth) = match link {
            Some((p, text_base)) => (
                Some(Arc::clone(p)),
                text_base,
                out.seed_ids,
                out.ids.into_boxed_slice(),
                p.depth + 1,
            ),
            None if out.seed_ids == 0 => (None, 0, 0, out.ids.into_boxed_slice(), 0),
            None => (None, 0, 0, Box::from(all_ids), 0),
        };
        let own_text: Box<[u8]> = Box::from(text.as_bytes().get(text_base..).unwrap_or_default());
        let w = &out.window;
        let weight = own_text.len()
            + ids.len() * 4
            + w.ids.len() * 4
            + w.tail.len() * 16
            + w.boundaries.len() * 8
            + ENTRY_OVERHEAD
            + parent.as_ref().map_or(0, |p| p.weight);
        let entry = Arc::new(L1Entry {
            parent,
            text_base,
            ids_base,
            n_ids: ids_base + ids.len(),
            text: own_text,
            ids,
            len: text.len(),
            flags,
            window: out.window,
            window_first: out.window_first,
            depth,
            weight,
        });
        self.map.insert(self.key(text.as_bytes(), flags, x), entry);
    }

    /// Bytes of `text`'s end whose spans an entry keeps: enough for a later
    /// prompt that shares the text up to its last full block (or up to
    /// [`EDGE_MARGIN_BYTES`] less) to start its fresh chunk `overlap_chars`
    /// before that, inside the window (invariant `cache-transparent`).
    fn keep_tail(&self, spec: &SplitSpec, parallel: &ParallelEncoder, text: &str) -> usize {
        let n = text.len();
        let reach = n.saturating_sub(self.block + EDGE_MARGIN_BYTES);
        let from = split::retreat_chars(text, reach, parallel.options().overlap_chars)
            .saturating_sub(split::window_slack(spec));
        n - from
    }

    /// Encodes `text` through the cache: the longest cached entry sharing a
    /// prefix with it seeds a LoPT merge, and the result is stored. `None`
    /// when the tokenizer's family cannot be cut (the caller encodes).
    ///
    /// Performance: on a long shared prefix the comparison of its bytes and
    /// the copy of its ids cost about as much as encoding a turn's new
    /// text, so they run on a second thread while the calling one encodes
    /// (invariant `cache-transparent`). The encode starts before the comparison has ended: if
    /// the bytes then differ, its result is dropped and the prompt goes
    /// through the cache again with every probe compared first.
    pub(crate) fn encode(
        &self,
        parallel: &ParallelEncoder,
        backend: &dyn backend::Tokenizer,
        text: &str,
        add_special_tokens: bool,
    ) -> Result<Option<Encoding>> {
        let Some(spec) = backend.split_spec().filter(|s| s.family.is_parallel()) else {
            return Ok(None);
        };
        // Deferred first; compared in full only when that found a difference
        // (which a full comparison never reports).
        for defer in [true, false] {
            if let Speculated::Done(encoding) =
                self.encode_with(parallel, backend, spec, text, add_special_tokens, defer)?
            {
                return Ok(Some(encoding));
            }
        }
        Err(Error::backend(
            backend.backend_name(),
            "compared prefix changed",
        ))
    }

    /// [`Self::encode`], with the bytes before the probed block compared
    /// on a second thread (`defer`) or before anything else.
    fn encode_with(
        &self,
        parallel: &ParallelEncoder,
        backend: &dyn backend::Tokenizer,
        spec: &SplitSpec,
        text: &str,
        add_special_tokens: bool,
        defer: bool,
    ) -> Result<Speculated> {
        let flags = u8::from(backend.parses_special_text());
        let t = text.as_bytes();
        let found = self.lookup(text, flags, defer);
        let builder = |capacity: usize| {
            EncodingBuilder::new(
                &spec.prefix,
                &spec.suffix,
                add_special_tokens,
                capacity,
                false,
            )
        };
        let name = backend.backend_name();
        if let Some(f) = &found
            && f.agree == text.len()
            && f.entry.len == text.len()
        {
            // The same text: its ids.
            if !f.entry.same_before(t, f.unchecked) {
                return Ok(Speculated::Differed);
            }
            self.hit(text.len(), 0);
            let mut out = builder(f.entry.n_ids);
            f.entry.extend_ids(0, f.entry.n_ids, &mut out.ids);
            return out.finish(text.len(), name).map(Speculated::Done);
        }
        let keep = self.keep_tail(spec, parallel, text);
        // The ids before the entry's window are kept whatever the cut (it
        // falls inside the window): the second thread compares the bytes
        // and copies those ids while this one encodes.
        let lead_ids = found
            .as_ref()
            .map_or(0, |f| f.entry.window_first.min(f.entry.n_ids));
        let compare_and_copy = || {
            let mut out = builder(match &found {
                Some(f) => {
                    let window_start = f.entry.window.tail.first().map_or(0, |&(s, _)| s);
                    f.entry.n_ids + text.len().saturating_sub(window_start)
                }
                None => text.len() / 2,
            });
            // The ids `add_special_tokens` puts first.
            let lead = out.ids.len();
            if let Some(f) = &found {
                if !f.entry.same_before(t, f.unchecked) {
                    return None;
                }
                f.entry.extend_ids(0, lead_ids, &mut out.ids);
            }
            Some((out, lead))
        };
        let encode_rest = || {
            let seed = found.as_ref().and_then(|f| seed_at(spec, text, f));
            let seed_given = seed.is_some();
            parallel
                .encode_windowed(backend, text, keep, seed)
                .map(|out| out.map(|o| (o, seed_given)))
        };
        let (copied, encoded) = if found.as_ref().is_some_and(|f| f.unchecked > 0) {
            parallel.join(compare_and_copy, encode_rest)
        } else {
            let copied = compare_and_copy();
            (Some(copied), encode_rest())
        };
        let Some((mut enc, lead)) = copied.flatten() else {
            return Ok(Speculated::Differed);
        };
        let Some((out, seed_given)) = encoded? else {
            return Err(Error::backend(
                name,
                "a parallel family without a windowed encode",
            ));
        };
        match (&found, seed_given && !out.seed_failed) {
            (None, _) => self.miss(),
            (Some(_), true) => self.hit(out.reused_bytes, out.reencoded_tokens),
            (Some(_), false) => self.fallback(),
        }
        let parent = join_ids(found.as_ref(), lead_ids, lead, &out, &mut enc.ids, name)?;
        let total = out.seed_ids + out.ids.len();
        let encoding = enc.finish(text.len(), name)?;
        let all_ids = encoding.ids().get(lead..lead + total).unwrap_or_default();
        self.store(text, flags, parent, out, all_ids);
        Ok(Speculated::Done(encoding))
    }

    /// Counts a lookup that reused `bytes` of text and encoded `reencoded`
    /// cached tokens again.
    pub(crate) fn hit(&self, bytes: usize, reencoded: usize) {
        self.metrics.hit(bytes, reencoded);
    }

    /// Counts a lookup that found nothing to reuse.
    pub(crate) fn miss(&self) {
        self.metrics.miss();
    }

    /// Counts a lookup whose entry could not be cut into (encoded in full).
    pub(crate) fn fallback(&self) {
        self.metrics.fallback();
    }

    /// Entries and weighted bytes now held (after pending maintenance).
    #[allow(dead_code)]
    pub(crate) fn usage(&self) -> (u64, u64) {
        self.map.run_pending_tasks();
        (self.map.entry_count(), self.map.weighted_size())
    }
}

/// Joins the ids of an encode through the cache in `ids` (which holds the
/// `lead` ids `add_special_tokens` puts first, then the seed's first
/// `lead_ids`): the seed's first `out.seed_ids` ids from the chain, then the
/// fresh ones. Gives the seed's entry and agreement, the new entry's parent.
fn join_ids<'f>(
    found: Option<&'f Found>,
    lead_ids: usize,
    lead: usize,
    out: &Windowed,
    ids: &mut Vec<u32>,
    name: &'static str,
) -> Result<Option<(&'f Arc<L1Entry>, usize)>> {
    let parent = match (found, out.seed_ids) {
        (_, 0) => None,
        (Some(f), _) => Some((&f.entry, f.agree)),
        (None, _) => return Err(Error::backend(name, "seed ids without a seed")),
    };
    match parent {
        Some((p, _)) if out.seed_ids >= lead_ids => {
            p.extend_ids(lead_ids, out.seed_ids, ids);
        }
        _ => ids.truncate(lead + out.seed_ids),
    }
    if ids.len() != lead + out.seed_ids {
        return Err(Error::backend(name, "cached ids shorter than the cut"));
    }
    ids.extend_from_slice(&out.ids);
    Ok(parent)
}

/// The seed for `text` from a found entry: the shared prefix cut back to
/// a position that is an allowed edge of both texts (or the end of one),
/// as the first chunk of a LoPT merge needs (docs/lopt.md, C1–C2). The
/// cached text's edges are tested on a copy of its bytes around the search
/// range (an edge depends on a few bytes either side of it).
fn seed_at<'a>(spec: &SplitSpec, text: &str, found: &'a Found) -> Option<Seed<'a>> {
    let entry = &*found.entry;
    if !entry.window.is_consistent(entry.len) {
        return None;
    }
    let lowest = found.agree.saturating_sub(EDGE_SEARCH_BYTES);
    let reach = spec.edges.max_token_len() + 8;
    // Below `agree` the two texts hold the same bytes, so a char boundary
    // of `text` is one of the cached text too.
    let mut lo = lowest.saturating_sub(reach);
    while !text.is_char_boundary(lo) {
        lo -= 1;
    }
    let hi = (found.agree + reach).min(entry.len);
    let mut bytes = entry.excerpt(lo, hi);
    if hi < entry.len {
        // Back to a char start (at most 3 continuation bytes).
        while bytes.last().is_some_and(|&b| b & 0xC0 == 0x80) {
            bytes.pop();
        }
        bytes.pop();
    }
    let cached = std::str::from_utf8(&bytes).ok()?;
    let ok = |m: usize| {
        (m == text.len() || spec.edges.allows(text, m))
            && (m == entry.len || spec.edges.allows(cached, m - lo))
    };
    let agree = (lowest..=found.agree).rev().find(|&m| m > 0 && ok(m))?;
    Some(entry.seed(agree))
}

/// Length of the longest common prefix of `a` and `b`, in bytes.
///
/// Performance: whole 4 KiB blocks go to one `memcmp` each (a call per
/// 64 bytes cost about 3× as much on a 500 KB prompt); the block that
/// differs is narrowed in 64-byte steps, then byte by byte.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 4096;
    const STEP: usize = 64;
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + BLOCK <= n && a[i..i + BLOCK] == b[i..i + BLOCK] {
        i += BLOCK;
    }
    while i + STEP <= n && a[i..i + STEP] == b[i..i + STEP] {
        i += STEP;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(bytes: u64) -> L1Cache {
        let mut options = PromptCacheOptions::off();
        options.l1_bytes = bytes;
        options.l1_block_bytes = 64;
        options.l1_min_bytes = 0;
        L1Cache::new(&options, &Labels::new("", "mock")).unwrap()
    }

    /// A windowed encoding of `text`: one id per byte, the first
    /// `seed_ids` of them left to the parent.
    fn windowed(text: &str, seed_ids: usize) -> Windowed {
        Windowed {
            seed_ids,
            ids: text.bytes().skip(seed_ids).map(u32::from).collect(),
            window: ChunkEncoding::default(),
            window_first: text.len(),
            reused_bytes: 0,
            reencoded_tokens: 0,
            seed_failed: false,
        }
    }

    fn ids_of(entry: &L1Entry) -> Vec<u32> {
        let mut out = Vec::new();
        entry.extend_ids(0, entry.n_ids, &mut out);
        out
    }

    #[test]
    fn finds_the_longest_stored_prefix_and_compares_bytes() {
        let cache = cache(1 << 20);
        let short = "a".repeat(150);
        let long = format!("{short}{}", "b".repeat(200));
        for t in [&short, &long] {
            let all: Vec<u32> = t.bytes().map(u32::from).collect();
            cache.store(t, 0, None, windowed(t, 0), &all);
        }
        let query = format!("{long}ccc");
        let found = cache.lookup(&query, 0, false).unwrap();
        assert_eq!((found.entry.len, found.agree), (350, 350));
        // Diverging inside the last block of `long`: still found, shorter agreement.
        let query = format!("{}x{}", &long[..330], "d".repeat(100));
        let found = cache.lookup(&query, 0, false).unwrap();
        assert_eq!(found.agree, 330);
        // Other flags, other keys.
        assert!(cache.lookup(&long, 1, false).is_none());
        // Shorter than a block: nothing.
        assert!(cache.lookup("aaa", 0, false).is_none());
        // An entry planted under the key of another text is never used.
        let other = "z".repeat(150);
        let planted = cache.lookup(&short, 0, false).unwrap().entry;
        cache
            .map
            .insert(cache.key(other.as_bytes(), 0, 128), planted);
        assert!(cache.lookup(&other, 0, false).is_none());
        assert_eq!(common_prefix(b"abcdef", b"abcxef"), 3);
        let a = vec![7u8; 300];
        let mut b = a.clone();
        b[299] = 0;
        assert_eq!(common_prefix(&a, &b), 299);
    }

    /// A deferred probe compares only from the probed block on: a byte
    /// changed before it is left to `same_before`, which sees it; an
    /// immediate probe rejects the entry.
    #[test]
    fn deferred_probes_leave_the_early_bytes_to_the_caller() {
        let cache = cache(1 << 20);
        let text: String = (0..40).map(|i| format!("line {i} of the text\n")).collect();
        let all: Vec<u32> = text.bytes().map(u32::from).collect();
        cache.store(&text, 0, None, windowed(&text, 0), &all);
        let x = text.len() / 64 * 64;
        for at in [0, 100, x - 65] {
            let mut edited = text.clone().into_bytes();
            edited[at] = b'#';
            let edited = String::from_utf8(edited).unwrap();
            let found = cache.lookup(&edited, 0, true).unwrap();
            assert_eq!((found.unchecked, found.agree), (x - 64, text.len()));
            assert!(!found.entry.same_before(edited.as_bytes(), found.unchecked));
            assert!(cache.lookup(&edited, 0, false).is_none());
        }
        // A change inside the probed block is seen by the probe itself.
        let mut edited = text.clone().into_bytes();
        edited[x - 10] = b'#';
        let edited = String::from_utf8(edited).unwrap();
        assert!(cache.lookup(&edited, 0, true).is_none());
        let found = cache.lookup(&text, 0, true).unwrap();
        assert!(found.entry.same_before(text.as_bytes(), found.unchecked));
    }

    /// A chain of entries, each extending (or editing the end of) the one
    /// before: texts, ids and excerpts read through the chain equal the
    /// whole ones, a byte changed anywhere in a parent is seen by the
    /// comparison, and a chain is cut into a whole entry at `MAX_DEPTH`.
    #[test]
    fn chained_entries_read_and_compare_like_whole_ones() {
        let cache = cache(1 << 24);
        let mut text = String::new();
        let mut prev: Option<Arc<L1Entry>> = None;
        for k in 0..(MAX_DEPTH as usize + 5) {
            let agree = text.len();
            // Every third turn edits the last 10 bytes of the previous one.
            let keep = if k % 3 == 2 { agree - 10 } else { agree };
            text.truncate(keep);
            text.push_str(&format!("turn {k}: {}", "xyz".repeat(40 + k)));
            let all: Vec<u32> = text.bytes().map(u32::from).collect();
            let parent = prev.as_ref().map(|p| (p, keep));
            let seed_ids = if prev.is_some() {
                keep.saturating_sub(3)
            } else {
                0
            };
            cache.store(&text, 0, parent, windowed(&text, seed_ids), &all);
            let found = cache.lookup(&text, 0, false).unwrap();
            assert_eq!(found.agree, text.len());
            let e = &found.entry;
            assert_eq!(ids_of(e), all, "turn {k}");
            assert_eq!(e.excerpt(0, e.len), text.as_bytes());
            assert_eq!(e.excerpt(7, e.len - 5), &text.as_bytes()[7..text.len() - 5]);
            assert!(e.depth <= MAX_DEPTH);
            if k == MAX_DEPTH as usize + 1 {
                assert_eq!(e.depth, 0, "a chain at the limit restarts whole");
            }
            // A byte changed at any position is a shorter agreement.
            for at in [0, text.len() / 3, text.len() / 2, text.len() - 1] {
                let mut other = text.clone().into_bytes();
                other[at] ^= 1;
                assert_eq!(e.agreement_from(&other, 0), at);
                let from = at.saturating_sub(64);
                assert_eq!(e.agreement_from(&other, from), at);
                assert!(e.same_before(&other, at));
                assert!(!e.same_before(&other, at + 1));
            }
            prev = Some(Arc::clone(e));
        }
        // Weights count the whole chain each entry keeps alive.
        let e = prev.unwrap();
        let parent_weight = e.parent.as_ref().map_or(0, |p| p.weight);
        assert!(e.weight > parent_weight && e.weight >= e.len);
    }

    /// A parent sharing less than half its text is not linked: the entry
    /// is stored whole, so a short shared prefix never pins a long text.
    #[test]
    fn short_shares_are_stored_whole() {
        let cache = cache(1 << 24);
        let long = "q".repeat(4000);
        let all: Vec<u32> = long.bytes().map(u32::from).collect();
        cache.store(&long, 0, None, windowed(&long, 0), &all);
        let parent = cache.lookup(&long, 0, false).unwrap().entry;
        let text = format!("{}{}", &long[..1000], "r".repeat(500));
        let all: Vec<u32> = text.bytes().map(u32::from).collect();
        cache.store(&text, 0, Some((&parent, 1000)), windowed(&text, 990), &all);
        let e = cache.lookup(&text, 0, false).unwrap().entry;
        assert!(e.parent.is_none());
        assert_eq!(ids_of(&e), all);
        assert_eq!(e.weight, 1500 + 1500 * 4 + ENTRY_OVERHEAD);
    }
}
