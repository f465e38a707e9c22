//! Parallel-encode counters: encodes, retries and sequential fallbacks.

use metrics::{Counter, counter};
use std::sync::Arc;

use super::{Bound, Labels};

/// Why a parallel encode gave up and encoded the whole text sequentially.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fallback {
    /// Fewer than two allowed chunk edges.
    Edges,
    /// A chunk encoding came back inconsistent.
    Chunk,
    /// No cut found within the retry budget.
    Retries,
    /// An accepted cut did not hold in the grown chunk.
    Relocate,
}

impl Fallback {
    const ALL: [Self; 4] = [Self::Edges, Self::Chunk, Self::Retries, Self::Relocate];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Edges => "edges",
            Self::Chunk => "chunk",
            Self::Retries => "retries",
            Self::Relocate => "relocate",
        }
    }
}

/// Parallel-encode counters for one tokenizer.
///
/// - `rtok_parallel_encodes_total`: encodes that took the parallel path;
/// - `rtok_parallel_retries_total{reason}`: chunk growths (`no_cut`) and
///   rests encoded in one piece past four chunk lengths (`grow_limit`);
/// - `rtok_parallel_fallbacks_total{reason}`: whole-text sequential fallbacks.
struct ParallelHandles {
    encodes: Counter,
    retry_no_cut: Counter,
    grow_limit: Counter,
    fallbacks: [Counter; 4],
}

impl ParallelHandles {
    fn register(labels: &Labels) -> Self {
        Self {
            encodes: counter!("rtok_parallel_encodes_total", labels.base()),
            retry_no_cut: counter!(
                "rtok_parallel_retries_total",
                labels.with(&[("reason", "no_cut")])
            ),
            grow_limit: counter!(
                "rtok_parallel_retries_total",
                labels.with(&[("reason", "grow_limit")])
            ),
            fallbacks: Fallback::ALL.map(|r| {
                counter!(
                    "rtok_parallel_fallbacks_total",
                    labels.with(&[("reason", r.name())])
                )
            }),
        }
    }
}

/// [`ParallelHandles`], bound lazily and shared by handles that differ only
/// in parallel options.
#[derive(Clone)]
pub(crate) struct ParallelMetrics(Arc<Bound<ParallelHandles>>);

impl ParallelMetrics {
    pub(crate) fn new(labels: Labels) -> Self {
        Self(Arc::new(Bound::new(labels, ParallelHandles::register)))
    }

    pub(crate) fn encode(&self) {
        if let Some(m) = self.0.get() {
            m.encodes.increment(1);
        }
    }

    pub(crate) fn retry_no_cut(&self) {
        if let Some(m) = self.0.get() {
            m.retry_no_cut.increment(1);
        }
    }

    pub(crate) fn grow_limit(&self) {
        if let Some(m) = self.0.get() {
            m.grow_limit.increment(1);
        }
    }

    pub(crate) fn fallback(&self, reason: Fallback) {
        if let Some(m) = self.0.get() {
            let i = Fallback::ALL.iter().position(|&r| r == reason).unwrap_or(0);
            m.fallbacks[i].increment(1);
        }
    }
}
