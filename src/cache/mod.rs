//! The prompt caches: L0, exact text → ids (DESIGN.md, invariants `cache-transparent` and
//! `caches-bounded`), and
//! L1, a cached prefix's ids reused up to a LoPT cut ([`prefix`], invariants
//! `cache-transparent` and `caches-bounded`).
//!
//! L0:
//! Keyed by a 64-bit hash of the text and of every option that changes the
//! ids (`add_special_tokens`, whether special-token text is parsed, the
//! tokenizer's identity) plus the text's length; an entry keeps its text and
//! is used only when the text is equal byte for byte, so a hash collision is
//! a miss, never wrong ids. A text is stored on its second miss (a
//! doorkeeper of recent keys), then moka bounds the bytes (a weigher) and
//! its TinyLFU admission keeps one-off prompts from evicting the ones that
//! recur. Shared by every clone of a handle.

use std::hash::Hasher;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use moka::notification::RemovalCause;
use rustc_hash::FxHasher;

use crate::metrics::{CacheMetrics, Labels};

pub(crate) mod prefix;

/// Prompt caches of a [`Tokenizer`](crate::Tokenizer), part of
/// [`LoadOptions`](crate::LoadOptions).
///
/// **L0** (exact text): on by default, 32 MiB for texts of at least 256
/// bytes. Why: a router sees the same long prompt again (retries, `n > 1`
/// fan-out, shared system prompts, health checks), and a hit returns a
/// 64 KB prompt's ids in microseconds instead of a full encode; 32 MiB
/// holds a few thousand such prompts per tokenizer, small next to a
/// router's memory. A text is stored on its **second** miss (a doorkeeper of
/// recently missed keys), so a prompt seen once costs a hash and two
/// lookups, never a copy or an insert, and a text is answered from its third
/// sighting: a single retry of a new prompt is encoded again. A router whose
/// retries must hit sets [`l0_store_on_first_miss`](Self::l0_store_on_first_miss),
/// and every one-off long prompt then pays a copy and an insert.
/// Texts shorter than `l0_min_bytes` never touch the cache:
/// they encode in about a microsecond, less than a hash and a lookup, so
/// short encodes pay nothing (one length comparison).
///
/// **L1** (longest cached prefix, lossless at any byte): off by default
/// (`l1_bytes` 0); [`with_l1`](Self::with_l1) turns it on (64 MiB is a
/// good size: about 50 prompts of 128K tokens, or the last turns of
/// hundreds of short conversations, evicted least recently used), for texts
/// of at least `l1_min_bytes` (8 KiB), in blocks of 1 KiB. Why off: a prompt
/// that finds no entry pays for the spans of its last bytes, the probes and
/// being stored, measured at +50% (64 KB) and +92% (16 KB) over a plain encode on a
/// quiet machine, up to +88% and +221% on a loaded one (Llama-3,
/// `docs/perf/design_log/caches.md`, entries 257–258), which one-off long
/// prompts (retrieval, single-shot requests) would pay for nothing.
/// Conversational traffic gains: turn `k + 1` starts with turn `k`'s prompt,
/// entries share the prefix they extend, and with L1 the last turn of a
/// 128K-token conversation encoded 7.9–20.8× faster in our runs (a loaded
/// machine). Only
/// [`Tokenizer::encode`](crate::Tokenizer::encode) (and so `encode_chat`)
/// uses it, and only for tokenizers whose
/// [`split_family`](crate::Tokenizer::split_family) can be cut.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PromptCacheOptions {
    /// The L0 cache's capacity in bytes (text + ids + 64 per entry); 0 turns it off.
    pub l0_bytes: u64,
    /// Texts shorter than this many bytes bypass the L0 cache.
    pub l0_min_bytes: usize,
    /// Store a text on its first miss, so a single retry hits (off by
    /// default: the second miss, so text seen once is never copied).
    pub l0_store_on_first_miss: bool,
    /// The L1 cache's capacity in bytes (an entry weighs its own text and
    /// ids, its span window and 160 bytes, plus the entry it extends); 0
    /// turns it off.
    pub l1_bytes: u64,
    /// Texts shorter than this many bytes (or than one block) bypass the L1 cache.
    pub l1_min_bytes: usize,
    /// L1 block size in bytes (at least 64): a lookup probes one key per
    /// block of the prompt, and an entry is found when the prompt shares
    /// its text up to the entry's last full block.
    pub l1_block_bytes: usize,
}

impl Default for PromptCacheOptions {
    fn default() -> Self {
        Self {
            l0_bytes: 32 << 20,
            l0_min_bytes: 256,
            l0_store_on_first_miss: false,
            l1_bytes: 0,
            l1_min_bytes: 8 << 10,
            l1_block_bytes: 1 << 10,
        }
    }
}

impl PromptCacheOptions {
    /// No caches.
    pub fn off() -> Self {
        Self {
            l0_bytes: 0,
            l1_bytes: 0,
            ..Self::default()
        }
    }

    /// Only an L0 cache of `bytes`, for texts of at least `min_bytes`.
    pub fn l0(bytes: u64, min_bytes: usize) -> Self {
        Self {
            l0_bytes: bytes,
            l0_min_bytes: min_bytes,
            ..Self::off()
        }
    }

    /// These options with L0 storing a text on its first miss (or not).
    pub fn with_l0_store_on_first_miss(mut self, on: bool) -> Self {
        self.l0_store_on_first_miss = on;
        self
    }

    /// A good L1 size for conversational traffic (see the type's docs).
    pub const L1_BYTES: u64 = 64 << 20;

    /// These options with an L1 cache of `bytes` (e.g. [`Self::L1_BYTES`]).
    pub fn with_l1(mut self, bytes: u64) -> Self {
        self.l1_bytes = bytes;
        self
    }

    /// Only an L1 cache of `bytes`, for texts of at least `min_bytes`, in
    /// blocks of `block_bytes`.
    pub fn l1(bytes: u64, min_bytes: usize, block_bytes: usize) -> Self {
        Self {
            l1_bytes: bytes,
            l1_min_bytes: min_bytes,
            l1_block_bytes: block_bytes,
            ..Self::off()
        }
    }
}

/// Bytes charged per entry beyond its text and ids.
const ENTRY_OVERHEAD: usize = 64;

struct Entry {
    text: Box<str>,
    ids: Box<[u32]>,
}

/// Slots of the doorkeeper: recent missed keys, one `u64` each.
const DOORKEEPER_SLOTS: usize = 4096;

/// One handle's L0 cache.
pub(crate) struct L0Cache {
    map: moka::sync::Cache<u128, Arc<Entry>>,
    /// The low 64 bits of recently missed keys: a text is stored on its
    /// second miss, so a one-off prompt costs a hash and two lookups, never
    /// a copy or a moka insert (invariant `caches-bounded`).
    doorkeeper: Box<[AtomicU64]>,
    min_bytes: usize,
    /// `PromptCacheOptions::l0_store_on_first_miss`.
    first_miss: bool,
    /// Distinguishes tokenizers should a cache ever be shared.
    identity: u64,
    metrics: CacheMetrics,
}

/// A moka cache bounded to `capacity` weighted bytes (`weight` per entry,
/// saturating at `u32::MAX`) that counts size evictions in `metrics`.
pub(crate) fn bounded<V: Send + Sync + 'static>(
    capacity: u64,
    weight: fn(&V) -> usize,
    policy: moka::policy::EvictionPolicy,
    metrics: CacheMetrics,
) -> moka::sync::Cache<u128, Arc<V>> {
    moka::sync::Cache::builder()
        .max_capacity(capacity)
        .eviction_policy(policy)
        .weigher(move |_k: &u128, e: &Arc<V>| u32::try_from(weight(e)).unwrap_or(u32::MAX))
        .eviction_listener(move |_k, _v, cause| {
            if cause == RemovalCause::Size {
                metrics.eviction();
            }
        })
        .build()
}

pub(crate) static NEXT_IDENTITY: AtomicU64 = AtomicU64::new(1);

impl L0Cache {
    /// `None` when the options turn it off.
    pub(crate) fn new(options: &PromptCacheOptions, labels: &Labels) -> Option<Self> {
        if options.l0_bytes == 0 {
            return None;
        }
        let metrics = CacheMetrics::l0(labels);
        let map = bounded(
            options.l0_bytes,
            |e: &Entry| e.text.len() + e.ids.len() * 4 + ENTRY_OVERHEAD,
            moka::policy::EvictionPolicy::tiny_lfu(),
            metrics.clone(),
        );
        Some(Self {
            map,
            doorkeeper: (0..DOORKEEPER_SLOTS).map(|_| AtomicU64::new(0)).collect(),
            min_bytes: options.l0_min_bytes,
            first_miss: options.l0_store_on_first_miss,
            identity: NEXT_IDENTITY.fetch_add(1, Ordering::Relaxed),
            metrics,
        })
    }

    /// Whether `text` goes through the cache at all.
    #[inline]
    pub(crate) fn applies(&self, text: &str) -> bool {
        text.len() >= self.min_bytes
    }

    /// 64 bits of FxHash over the identity, flags and text, then the length:
    /// one pass over the text (a collision is a miss, invariant `cache-transparent`).
    fn key(&self, text: &str, flags: u8) -> u128 {
        let mut h = FxHasher::with_seed(0x9E37_79B9);
        h.write_u64(self.identity);
        h.write_u8(flags);
        h.write(text.as_bytes());
        (u128::from(h.finish()) << 64) | text.len() as u128
    }

    /// The cached ids of `text`, or the result of `encode` (stored when the
    /// same key missed recently).
    pub(crate) fn get_or_encode<E>(
        &self,
        text: &str,
        flags: u8,
        encode: impl FnOnce() -> Result<Vec<u32>, E>,
    ) -> Result<Vec<u32>, E> {
        let key = self.key(text, flags);
        if let Some(e) = self.map.get(&key)
            && *e.text == *text
        {
            self.metrics.hit(text.len(), 0);
            return Ok(e.ids.to_vec());
        }
        self.metrics.miss();
        let ids = encode()?;
        // Admit on the second miss within the doorkeeper's memory.
        let low = (key >> 64) as u64 | 1;
        let slot = &self.doorkeeper[(low as usize >> 1) % DOORKEEPER_SLOTS];
        if !self.first_miss && slot.swap(low, Ordering::Relaxed) != low {
            return Ok(ids);
        }
        self.map.insert(
            key,
            Arc::new(Entry {
                text: Box::from(text),
                ids: Box::from(ids.as_slice()),
            }),
        );
        Ok(ids)
    }

    /// Entries and weighted bytes now held (after pending maintenance).
    #[allow(dead_code)]
    pub(crate) fn usage(&self) -> (u64, u64) {
        self.map.run_pending_tasks();
        (self.map.entry_count(), self.map.weighted_size())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    fn counters(snapshotter: &metrics_util::debugging::Snapshotter) -> Vec<(String, u64)> {
        let mut out: Vec<(String, u64)> = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .filter_map(|(key, _, _, value)| match value {
                DebugValue::Counter(n) => Some((key.key().name().to_owned(), n)),
                _ => None,
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn hits_misses_evictions_and_bytes_are_counted() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let cache = metrics::with_local_recorder(&recorder, || {
            L0Cache::new(&PromptCacheOptions::l0(4096, 4), &Labels::new("", "mock"))
        })
        .unwrap();
        let encode = |t: &str| Ok::<_, ()>(t.bytes().map(u32::from).collect::<Vec<u32>>());
        assert!(!cache.applies("abc"));
        assert!(cache.applies("abcd"));
        let text = "x".repeat(100);
        // A text is stored on its second miss, answered from the third call.
        assert_eq!(
            cache.get_or_encode(&text, 0, || encode(&text)),
            encode(&text)
        );
        assert_eq!(
            cache.get_or_encode(&text, 0, || encode(&text)),
            encode(&text)
        );
        assert_eq!(cache.get_or_encode(&text, 0, || Err(())), encode(&text));
        // Another flag is another key.
        assert_eq!(cache.get_or_encode(&text, 1, || Err(())), Err(()));
        // 40 texts of ~600 weighted bytes each cannot all fit in 4096.
        for i in 0..40 {
            let t = format!("{i:03}{}", "y".repeat(100));
            for _ in 0..2 {
                assert_eq!(cache.get_or_encode(&t, 0, || encode(&t)), encode(&t));
            }
        }
        let (_, weighted) = cache.usage();
        assert!(weighted <= 4096, "{weighted}");
        let got = counters(&snapshotter);
        let get = |name: &str| got.iter().find(|(n, _)| n == name).map_or(0, |(_, v)| *v);
        assert_eq!(get("rtok_cache_hits_total"), 1);
        assert_eq!(get("rtok_cache_misses_total"), 83);
        assert_eq!(get("rtok_cache_bytes_reused_total"), 100);
        assert!(get("rtok_cache_evictions_total") > 0, "{got:?}");
    }

    #[test]
    fn one_off_texts_are_not_stored() {
        let cache = L0Cache::new(
            &PromptCacheOptions::l0(1 << 20, 0),
            &Labels::new("", "mock"),
        )
        .unwrap();
        for i in 0..1000 {
            let t = format!("one-off prompt {i}");
            assert_eq!(
                cache.get_or_encode(&t, 0, || Ok::<_, ()>(vec![i])),
                Ok(vec![i])
            );
        }
        assert_eq!(cache.usage().0, 0);
        let t = "seen twice";
        for _ in 0..2 {
            assert_eq!(
                cache.get_or_encode(t, 0, || Ok::<_, ()>(vec![7])),
                Ok(vec![7])
            );
        }
        assert_eq!(cache.usage().0, 1);
    }

    #[test]
    fn a_single_retry_hits_only_when_asked() {
        let encodes = std::cell::Cell::new(0);
        let encode = || {
            encodes.set(encodes.get() + 1);
            Ok::<_, ()>(vec![1])
        };
        for (first_miss, want) in [(false, 2), (true, 1)] {
            let options =
                PromptCacheOptions::l0(1 << 20, 0).with_l0_store_on_first_miss(first_miss);
            let cache = L0Cache::new(&options, &Labels::new("", "mock")).unwrap();
            encodes.set(0);
            // A prompt and its retry.
            for _ in 0..2 {
                assert_eq!(cache.get_or_encode("a prompt", 0, encode), Ok(vec![1]));
            }
            assert_eq!(encodes.get(), want, "first_miss {first_miss}");
        }
    }

    #[test]
    fn a_hash_match_with_other_text_is_a_miss() {
        let cache = L0Cache::new(
            &PromptCacheOptions::l0(1 << 20, 0),
            &Labels::new("", "mock"),
        )
        .unwrap();
        let key = cache.key("abc", 0);
        // Plant an entry under the key of "abc" holding another text.
        cache.map.insert(
            key,
            Arc::new(Entry {
                text: Box::from("abd"),
                ids: Box::from([9u32].as_slice()),
            }),
        );
        let ids = cache.get_or_encode("abc", 0, || Ok::<_, ()>(vec![1, 2, 3]));
        assert_eq!(ids, Ok(vec![1, 2, 3]));
    }
}
