//! The L1 prefix cache: the longest cached text that shares a prefix with a
//! prompt seeds a LoPT merge, so only the text past an overlap before the
//! shared prefix's end is encoded (DESIGN.md, claims 220–229).
//!
//! An entry is one encoded text: its bytes, its ids and the spans and
//! pre-token boundaries of its last bytes (a [`ChunkEncoding`] in text
//! coordinates). It is keyed by its last full block boundary `x` and a hash
//! of the block ending there, so a lookup probes one key per block boundary
//! of the prompt, longest first, hashing one block per probe. A probe is
//! used only after the entry's bytes are compared with the prompt's over the
//! whole shared prefix (a collision is a miss, never wrong ids).

use std::hash::Hasher;
use std::sync::Arc;

use metrics::{Counter, counter};
use moka::policy::EvictionPolicy;
use rustc_hash::FxHasher;

use std::sync::atomic::Ordering;

use super::{NEXT_IDENTITY, PromptCacheOptions, bounded};
use crate::backend;
use crate::encode::parallel::{ParallelEncoder, Seed};
use crate::encode::{ChunkEncoding, SplitSpec, split};
use crate::encoding::{Encoding, EncodingBuilder};
use crate::error::Result;

/// How far back from the shared prefix's end an allowed edge is searched
/// for (bytes); past it the entry is not used.
const EDGE_SEARCH_BYTES: usize = 1024;

/// Bytes charged per entry beyond its text, ids and windows.
const ENTRY_OVERHEAD: usize = 128;

/// Smallest block size: below it the per-block probe costs more than the
/// bytes it could save.
pub(crate) const MIN_BLOCK_BYTES: usize = 64;

/// One cached encoding.
pub(crate) struct L1Entry {
    pub(crate) text: Box<str>,
    /// The flags it was encoded under (compared on every match, like the bytes).
    flags: u8,
    /// Ids (no BOS/EOS), spans of the last tokens, boundaries near the end.
    pub(crate) enc: ChunkEncoding,
}

impl L1Entry {
    fn weight(&self) -> usize {
        let e = &self.enc;
        self.text.len()
            + e.ids.len() * 4
            + e.tail.len() * 16
            + e.boundaries.len() * 8
            + ENTRY_OVERHEAD
    }
}

/// A cached entry whose text agrees with the prompt on its first `agree` bytes.
pub(crate) struct Found {
    pub(crate) entry: Arc<L1Entry>,
    pub(crate) agree: usize,
}

#[derive(Clone)]
struct L1Metrics {
    hits: Counter,
    misses: Counter,
    evictions: Counter,
    bytes_reused: Counter,
    tokens_reencoded: Counter,
    fallbacks: Counter,
}

/// One handle's L1 cache.
pub(crate) struct L1Cache {
    map: moka::sync::Cache<u128, Arc<L1Entry>>,
    block: usize,
    min_bytes: usize,
    identity: u64,
    metrics: L1Metrics,
}

impl L1Cache {
    /// `None` when the options turn it off.
    pub(crate) fn new(options: &PromptCacheOptions, backend: &'static str) -> Option<Self> {
        if options.l1_bytes == 0 {
            return None;
        }
        let c = |name: &'static str| counter!(name, "backend" => backend, "cache" => "l1");
        let metrics = L1Metrics {
            hits: c("rtok_cache_hits_total"),
            misses: c("rtok_cache_misses_total"),
            evictions: c("rtok_cache_evictions_total"),
            bytes_reused: c("rtok_cache_bytes_reused_total"),
            tokens_reencoded: c("rtok_cache_l1_tokens_reencoded_total"),
            fallbacks: c("rtok_cache_l1_fallbacks_total"),
        };
        // LRU, not TinyLFU: a conversation's next turn extends the prompt
        // stored last, which has been seen once.
        let map = bounded(
            options.l1_bytes,
            L1Entry::weight,
            EvictionPolicy::lru(),
            metrics.evictions.clone(),
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
    /// and how many bytes the two share (compared byte for byte). Probes
    /// one key per block boundary, longest first.
    pub(crate) fn lookup(&self, text: &str, flags: u8) -> Option<Found> {
        let t = text.as_bytes();
        let mut x = t.len() / self.block * self.block;
        while x > 0 {
            if let Some(entry) = self.map.get(&self.key(t, flags, x)) {
                let e = entry.text.as_bytes();
                if entry.flags == flags && e.len() >= x && e[..x] == t[..x] {
                    let agree = x + common_prefix(&e[x..], &t[x..]);
                    return Some(Found { entry, agree });
                }
            }
            x -= self.block;
        }
        None
    }

    /// Stores the encoding of `text` under its last full block boundary.
    pub(crate) fn store(&self, text: &str, flags: u8, enc: ChunkEncoding) {
        let x = text.len() / self.block * self.block;
        if x == 0 {
            return;
        }
        let key = self.key(text.as_bytes(), flags, x);
        let entry = Arc::new(L1Entry {
            text: Box::from(text),
            flags,
            enc,
        });
        self.map.insert(key, entry);
    }

    /// Encodes `text` through the cache: the longest cached entry sharing a
    /// prefix with it seeds a LoPT merge, and the result is stored. `None`
    /// when the tokenizer's family cannot be cut (the caller encodes).
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
        let flags = u8::from(backend.parses_special_text());
        let found = self.lookup(text, flags);
        let wrap = |ids: &[u32]| {
            let mut out = EncodingBuilder::new(
                &spec.prefix,
                &spec.suffix,
                add_special_tokens,
                ids.len(),
                false,
            );
            out.ids.extend_from_slice(ids);
            out.finish(text.len(), backend.backend_name())
        };
        if let Some(f) = &found
            && f.agree == text.len()
            && f.entry.text.len() == text.len()
        {
            // The same text: its ids.
            self.hit(text.len(), 0);
            return wrap(&f.entry.enc.ids).map(Some);
        }
        let seed = found.as_ref().and_then(|f| seed_at(spec, text, f));
        let keep =
            self.block + 4 * parallel.options().overlap_chars + 2 * split::window_slack(spec);
        let seed_given = seed.is_some();
        let Some(out) = parallel.encode_windowed(backend, text, keep, seed)? else {
            return Ok(None);
        };
        match (&found, seed_given && !out.seed_failed) {
            (None, _) => self.miss(),
            (Some(_), true) => self.hit(out.reused_bytes, out.reencoded_tokens),
            (Some(_), false) => self.fallback(),
        }
        let encoding = wrap(&out.enc.ids)?;
        self.store(text, flags, out.enc);
        Ok(Some(encoding))
    }

    /// Counts a lookup that reused `bytes` of text and encoded `reencoded`
    /// cached tokens again.
    pub(crate) fn hit(&self, bytes: usize, reencoded: usize) {
        self.metrics.hits.increment(1);
        self.metrics.bytes_reused.increment(bytes as u64);
        self.metrics.tokens_reencoded.increment(reencoded as u64);
    }

    /// Counts a lookup that found nothing to reuse.
    pub(crate) fn miss(&self) {
        self.metrics.misses.increment(1);
    }

    /// Counts a lookup whose entry could not be cut into (encoded in full).
    pub(crate) fn fallback(&self) {
        self.metrics.misses.increment(1);
        self.metrics.fallbacks.increment(1);
    }

    /// Entries and weighted bytes now held (after pending maintenance).
    #[allow(dead_code)]
    pub(crate) fn usage(&self) -> (u64, u64) {
        self.map.run_pending_tasks();
        (self.map.entry_count(), self.map.weighted_size())
    }
}

/// The seed for `text` from a found entry: the shared prefix cut back to
/// a position that is an allowed edge of both texts (or the end of one),
/// as the first chunk of a LoPT merge needs (docs/lopt.md, C1–C2).
fn seed_at<'a>(spec: &SplitSpec, text: &str, found: &'a Found) -> Option<Seed<'a>> {
    let cached = &*found.entry.text;
    if !found.entry.enc.is_consistent(cached.len()) {
        return None;
    }
    let ok = |m: usize| {
        (m == text.len() || spec.edges.allows(text, m))
            && (m == cached.len() || spec.edges.allows(cached, m))
    };
    let lowest = found.agree.saturating_sub(EDGE_SEARCH_BYTES);
    let agree = (lowest..=found.agree).rev().find(|&m| m > 0 && ok(m))?;
    Some(Seed {
        enc: &found.entry.enc,
        agree,
    })
}

/// Length of the longest common prefix of `a` and `b`, in bytes.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const STEP: usize = 64;
    let n = a.len().min(b.len());
    let mut i = 0;
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

    fn entry(text: &str) -> ChunkEncoding {
        ChunkEncoding {
            ids: text.bytes().map(u32::from).collect(),
            ..ChunkEncoding::default()
        }
    }

    #[test]
    fn finds_the_longest_stored_prefix_and_compares_bytes() {
        let mut options = PromptCacheOptions::off();
        options.l1_bytes = 1 << 20;
        options.l1_block_bytes = 64;
        options.l1_min_bytes = 0;
        let cache = L1Cache::new(&options, "mock").unwrap();
        let short = "a".repeat(150);
        let long = format!("{short}{}", "b".repeat(200));
        for t in [&short, &long] {
            cache.store(t, 0, entry(t));
        }
        let query = format!("{long}ccc");
        let found = cache.lookup(&query, 0).unwrap();
        assert_eq!((found.entry.text.len(), found.agree), (350, 350));
        // Diverging inside the last block of `long`: still found, shorter agreement.
        let query = format!("{}x{}", &long[..330], "d".repeat(100));
        let found = cache.lookup(&query, 0).unwrap();
        assert_eq!(found.agree, 330);
        // Other flags, other keys.
        assert!(cache.lookup(&long, 1).is_none());
        // Shorter than a block: nothing.
        assert!(cache.lookup("aaa", 0).is_none());
        // An entry planted under the key of another text is never used.
        let other = "z".repeat(150);
        cache.map.insert(
            cache.key(other.as_bytes(), 0, 128),
            Arc::new(L1Entry {
                text: Box::from(short.as_str()),
                flags: 0,
                enc: entry(&short),
            }),
        );
        assert!(cache.lookup(&other, 0).is_none());
        assert_eq!(common_prefix(b"abcdef", b"abcxef"), 3);
        let a = vec![7u8; 300];
        let mut b = a.clone();
        b[299] = 0;
        assert_eq!(common_prefix(&a, &b), 299);
    }
}
