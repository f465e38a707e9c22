//! Metrics through the `metrics` crate, with handles registered once per tokenizer.
//!
//! Every name starts with `rtok_` and carries a `backend` label. Handles are
//! resolved against the recorder installed when the tokenizer is built, so
//! install the recorder first. Counters and the token histogram see every
//! call; durations are timed on one call in [`TIMING_SAMPLE`] per thread,
//! because two clock reads cost more than 1% of a short encode (the
//! `metrics` bench group measures it).

use metrics::{Counter, Histogram, counter, histogram};
use std::cell::Cell;
use std::time::{Duration, Instant};

/// One call in this many (per thread) records its duration.
pub(crate) const TIMING_SAMPLE: u32 = 16;

thread_local! {
    static CALLS: Cell<u32> = const { Cell::new(0) };
}

/// Whether this call is timed: true on the first call of each thread, then every `TIMING_SAMPLE`-th.
#[inline]
fn sampled() -> bool {
    CALLS.with(|c| {
        let n = c.get();
        c.set(n.wrapping_add(1));
        n % TIMING_SAMPLE == 0
    })
}

/// Encode/decode counters and histograms for one tokenizer.
#[derive(Clone)]
pub(crate) struct Metrics {
    encode_requests: Counter,
    encode_errors: Counter,
    encode_seconds: Histogram,
    encode_tokens: Histogram,
    decode_requests: Counter,
    decode_errors: Counter,
    decode_seconds: Histogram,
    /// `rtok_stream_unknown_ids_total`: ids outside the vocabulary that a
    /// stream skipped (`UnknownIds::Skip`).
    pub(crate) stream_unknown_ids: Counter,
}

impl Metrics {
    pub(crate) fn new(backend: &'static str) -> Self {
        Self {
            encode_requests: counter!("rtok_encode_requests_total", "backend" => backend),
            encode_errors: counter!("rtok_encode_errors_total", "backend" => backend),
            encode_seconds: histogram!("rtok_encode_duration_seconds", "backend" => backend),
            encode_tokens: histogram!("rtok_encode_tokens", "backend" => backend),
            decode_requests: counter!("rtok_decode_requests_total", "backend" => backend),
            decode_errors: counter!("rtok_decode_errors_total", "backend" => backend),
            decode_seconds: histogram!("rtok_decode_duration_seconds", "backend" => backend),
            stream_unknown_ids: counter!("rtok_stream_unknown_ids_total", "backend" => backend),
        }
    }

    /// Times an encode and counts its tokens (or its failure).
    #[inline]
    pub(crate) fn encode<T: AsRef<[u32]>, E>(
        &self,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        let start = sampled().then(Instant::now);
        let out = f();
        if let Some(start) = start {
            self.encode_seconds.record(start.elapsed());
        }
        self.encode_requests.increment(1);
        match &out {
            Ok(enc) => self.encode_tokens.record(enc.as_ref().len() as f64),
            Err(_) => self.encode_errors.increment(1),
        }
        out
    }

    /// Times a decode (or counts its failure).
    #[inline]
    pub(crate) fn decode<T, E>(&self, f: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        let start = sampled().then(Instant::now);
        let out = f();
        if let Some(start) = start {
            self.decode_seconds.record(start.elapsed());
        }
        self.decode_requests.increment(1);
        if out.is_err() {
            self.decode_errors.increment(1);
        }
        out
    }
}

/// Counts a factory load and its duration.
pub(crate) fn record_load(backend: &'static str, elapsed: Duration) {
    counter!("rtok_loads_total", "backend" => backend).increment(1);
    histogram!("rtok_load_duration_seconds", "backend" => backend).record(elapsed);
}

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

/// Parallel-encode counters for one tokenizer, registered once.
///
/// - `rtok_parallel_encodes_total`: encodes that took the parallel path;
/// - `rtok_parallel_retries_total{reason}`: chunk growths (`no_cut`) and
///   rests encoded in one piece past four chunk lengths (`grow_limit`);
/// - `rtok_parallel_fallbacks_total{reason}`: whole-text sequential fallbacks.
#[derive(Clone)]
pub(crate) struct ParallelMetrics {
    pub(crate) encodes: Counter,
    pub(crate) retry_no_cut: Counter,
    pub(crate) grow_limit: Counter,
    fallbacks: [Counter; 4],
}

impl ParallelMetrics {
    pub(crate) fn new(backend: &'static str) -> Self {
        Self {
            encodes: counter!("rtok_parallel_encodes_total", "backend" => backend),
            retry_no_cut: counter!("rtok_parallel_retries_total", "backend" => backend, "reason" => "no_cut"),
            grow_limit: counter!("rtok_parallel_retries_total", "backend" => backend, "reason" => "grow_limit"),
            fallbacks: Fallback::ALL.map(|r| {
                counter!("rtok_parallel_fallbacks_total", "backend" => backend, "reason" => r.name())
            }),
        }
    }

    pub(crate) fn fallback(&self, reason: Fallback) {
        let i = Fallback::ALL.iter().position(|&r| r == reason).unwrap_or(0);
        self.fallbacks[i].increment(1);
    }
}
