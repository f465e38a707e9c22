//! The prompt caches' counters: hits, misses, evictions, bytes reused, and L1's re-encodes
//! and fallbacks.

use metrics::{Counter, counter};
use std::sync::Arc;

use super::{Bound, Labels};

/// One prompt cache's counters (`cache` label `l0` or `l1`).
struct CacheHandles {
    hits: Counter,
    misses: Counter,
    evictions: Counter,
    bytes_reused: Counter,
    /// L1 only (a no-op handle for L0, which has no such series).
    tokens_reencoded: Counter,
    /// L1 only, like `tokens_reencoded`.
    fallbacks: Counter,
}

impl CacheHandles {
    fn register(labels: &Labels, cache: &'static str) -> Self {
        let l = labels.with(&[("cache", cache)]);
        let l1 = cache == "l1";
        Self {
            hits: counter!("rtok_cache_hits_total", l.clone()),
            misses: counter!("rtok_cache_misses_total", l.clone()),
            evictions: counter!("rtok_cache_evictions_total", l.clone()),
            bytes_reused: counter!("rtok_cache_bytes_reused_total", l.clone()),
            tokens_reencoded: if l1 {
                counter!("rtok_cache_l1_tokens_reencoded_total", l.clone())
            } else {
                Counter::noop()
            },
            fallbacks: if l1 {
                counter!("rtok_cache_l1_fallbacks_total", l)
            } else {
                Counter::noop()
            },
        }
    }
}

/// A prompt cache's counters, bound lazily; the cache's eviction listener
/// holds a clone.
#[derive(Clone)]
pub(crate) struct CacheMetrics(Arc<Bound<CacheHandles>>);

impl CacheMetrics {
    pub(crate) fn l0(labels: &Labels) -> Self {
        Self(Arc::new(Bound::new(labels.clone(), |l| {
            CacheHandles::register(l, "l0")
        })))
    }

    pub(crate) fn l1(labels: &Labels) -> Self {
        Self(Arc::new(Bound::new(labels.clone(), |l| {
            CacheHandles::register(l, "l1")
        })))
    }

    /// A lookup that reused `bytes` of text and encoded `reencoded` cached
    /// ids again (always 0 for L0).
    pub(crate) fn hit(&self, bytes: usize, reencoded: usize) {
        if let Some(m) = self.0.get() {
            m.hits.increment(1);
            m.bytes_reused.increment(bytes as u64);
            if reencoded > 0 {
                m.tokens_reencoded.increment(reencoded as u64);
            }
        }
    }

    /// A lookup that found nothing to reuse.
    pub(crate) fn miss(&self) {
        if let Some(m) = self.0.get() {
            m.misses.increment(1);
        }
    }

    /// An L1 lookup whose entry could not be cut into: a miss, and a fallback.
    pub(crate) fn fallback(&self) {
        if let Some(m) = self.0.get() {
            m.misses.increment(1);
            m.fallbacks.increment(1);
        }
    }

    /// An entry evicted for size.
    pub(crate) fn eviction(&self) {
        if let Some(m) = self.0.get() {
            m.evictions.increment(1);
        }
    }
}
