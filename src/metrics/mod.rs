//! Metrics through the `metrics` crate, with handles registered once per tokenizer.
//!
//! Every name starts with `rtok_`; the public list, with labels and units, is
//! in the crate docs (`# Metrics` in `lib.rs`) and README.md, and [`DESCRIPTIONS`](descriptions::DESCRIPTIONS)
//! is the one table both follow. Each series carries the tokenizer's
//! [`Labels`]: `tokenizer` (its source) and `backend`.
//!
//! Handles are bound lazily ([`Bound`]): a tokenizer built while no recorder
//! is installed binds on its first call that finds one, so a recorder
//! installed after the first load still receives that tokenizer's metrics
//! (the registry hands the same handle to every later load of the source,
//! which is why binding at build time alone lost them for good). Once bound,
//! a call costs one atomic load more than a plain handle; unbound, one
//! thread-local read and one atomic load, and nothing is recorded.
//!
//! Counters and the token histograms see every call; encode and decode
//! durations are timed on one call in [`TIMING_SAMPLE`] per thread, because
//! two clock reads cost more than 1% of a short encode (the `metrics` bench
//! group measures it). Loads and chat renders are timed on every call: they
//! take microseconds at least.

mod cache;
mod descriptions;
mod load;
mod parallel;
#[cfg(test)]
mod tests;

use metrics::{Counter, Histogram, Label, SharedString, counter, histogram};
use std::cell::Cell;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use crate::error::Result;
pub(crate) use cache::CacheMetrics;
use descriptions::describe;
pub(crate) use load::{record_load, record_load_error};
pub(crate) use parallel::{Fallback, ParallelMetrics};

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

/// Whether a recorder is installed (global, or local to this thread).
///
/// `metrics` 0.24 cannot be asked, but its fallback, `NoopRecorder`, is a
/// zero-sized type and real recorders hold state: a zero-sized recorder of
/// one's own is taken for no recorder (documented in the crate docs).
fn recorder_installed() -> bool {
    metrics::with_recorder(|recorder| std::mem::size_of_val(recorder) != 0)
}

/// The labels every series of one tokenizer carries.
#[derive(Clone, Debug)]
pub(crate) struct Labels {
    /// `tokenizer`: the source it was loaded from (an alias's target), or
    /// the backend name for a custom backend, which has no source.
    tokenizer: Arc<str>,
    backend: &'static str,
}

impl Labels {
    pub(crate) fn new(source: &str, backend: &'static str) -> Self {
        let tokenizer = if source.is_empty() { backend } else { source };
        Self {
            tokenizer: Arc::from(tokenizer),
            backend,
        }
    }

    /// `tokenizer`, `backend`, then `extra`.
    fn with(&self, extra: &[(&'static str, &'static str)]) -> Vec<Label> {
        let mut labels = Vec::with_capacity(2 + extra.len());
        labels.push(Label::new(
            "tokenizer",
            SharedString::from(Arc::clone(&self.tokenizer)),
        ));
        labels.push(Label::from_static_parts("backend", self.backend));
        labels.extend(extra.iter().map(|&(k, v)| Label::from_static_parts(k, v)));
        labels
    }

    fn base(&self) -> Vec<Label> {
        self.with(&[])
    }
}

/// Handles of type `H`, registered the first time a recorder is there.
///
/// Bound handles stay bound to that recorder: a handle built under a local
/// recorder (`metrics::with_local_recorder`, as tests do) keeps reporting
/// to it outside the closure, as handles always did.
pub(crate) struct Bound<H> {
    labels: Labels,
    make: fn(&Labels) -> H,
    slot: OnceLock<H>,
}

impl<H> Bound<H> {
    /// Binds at once when a recorder is installed.
    fn new(labels: Labels, make: fn(&Labels) -> H) -> Self {
        let bound = Self {
            labels,
            make,
            slot: OnceLock::new(),
        };
        let _ = bound.get();
        bound
    }

    /// The handles, binding them first if a recorder has appeared; `None`
    /// while there is none (nothing would be recorded anyway).
    #[inline]
    fn get(&self) -> Option<&H> {
        match self.slot.get() {
            Some(handles) => Some(handles),
            None => self.bind(),
        }
    }

    #[cold]
    fn bind(&self) -> Option<&H> {
        if !recorder_installed() {
            return None;
        }
        Some(self.slot.get_or_init(|| {
            describe();
            (self.make)(&self.labels)
        }))
    }
}

/// Encode, decode, chat-render and stream handles for one tokenizer.
struct Handles {
    encode_requests: Counter,
    encode_errors: Counter,
    encode_seconds: Histogram,
    encode_tokens: Histogram,
    decode_requests: Counter,
    decode_errors: Counter,
    decode_seconds: Histogram,
    render_requests: Counter,
    render_errors: Counter,
    render_seconds: Histogram,
    render_tokens: Histogram,
    stream_steps: Counter,
    stream_unknown_ids: Counter,
    /// `rtok_stops_total` per [`stop_reason`] name, in [`STOP_REASONS`] order.
    stops: [Counter; 4],
}

/// The `reason` values of `rtok_stops_total`: `MatchedStop`'s serde tags.
const STOP_REASONS: [&str; 4] = ["eos", "token", "string", "token_sequence"];

/// A stop as `rtok_stops_total` counts it: its index in [`STOP_REASONS`].
/// Implemented by `decode::MatchedStop` (the decode layer sits above this one).
pub(crate) trait StopIndex {
    /// The index of this stop's `reason` in [`STOP_REASONS`].
    fn stop_index(&self) -> usize;
}

/// A chat request's result as `rtok_render_tokens` counts it. Implemented by
/// `request::ChatEncoding` (the request layer sits above this one).
pub(crate) trait PromptTokens {
    /// The prompt's token count.
    fn prompt_tokens(&self) -> usize;
}

impl Handles {
    fn register(labels: &Labels) -> Self {
        let l = labels.base();
        Self {
            encode_requests: counter!("rtok_encode_requests_total", l.clone()),
            encode_errors: counter!("rtok_encode_errors_total", l.clone()),
            encode_seconds: histogram!("rtok_encode_duration_seconds", l.clone()),
            encode_tokens: histogram!("rtok_encode_tokens", l.clone()),
            decode_requests: counter!("rtok_decode_requests_total", l.clone()),
            decode_errors: counter!("rtok_decode_errors_total", l.clone()),
            decode_seconds: histogram!("rtok_decode_duration_seconds", l.clone()),
            render_requests: counter!("rtok_render_requests_total", l.clone()),
            render_errors: counter!("rtok_render_errors_total", l.clone()),
            render_seconds: histogram!("rtok_render_duration_seconds", l.clone()),
            render_tokens: histogram!("rtok_render_tokens", l.clone()),
            stream_steps: counter!("rtok_stream_steps_total", l.clone()),
            stream_unknown_ids: counter!("rtok_stream_unknown_ids_total", l),
            stops: STOP_REASONS
                .map(|reason| counter!("rtok_stops_total", labels.with(&[("reason", reason)]))),
        }
    }
}

/// One tokenizer's metrics, shared by its clones and derived handles.
#[derive(Clone)]
pub(crate) struct Metrics(Arc<Bound<Handles>>);

impl Metrics {
    pub(crate) fn new(labels: Labels) -> Self {
        Self(Arc::new(Bound::new(labels, Handles::register)))
    }

    /// The labels the tokenizer's series carry (for its caches and loads).
    pub(crate) fn labels(&self) -> &Labels {
        &self.0.labels
    }

    /// Times an encode and counts its tokens (or its failure).
    #[inline]
    pub(crate) fn encode<T: AsRef<[u32]>, E>(
        &self,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        let Some(m) = self.0.get() else {
            return f();
        };
        let start = sampled().then(Instant::now);
        let out = f();
        if let Some(start) = start {
            m.encode_seconds.record(start.elapsed());
        }
        m.encode_requests.increment(1);
        match &out {
            Ok(enc) => m.encode_tokens.record(enc.as_ref().len() as f64),
            Err(_) => m.encode_errors.increment(1),
        }
        out
    }

    /// Times a decode (or counts its failure).
    #[inline]
    pub(crate) fn decode<T, E>(&self, f: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        let Some(m) = self.0.get() else {
            return f();
        };
        let start = sampled().then(Instant::now);
        let out = f();
        if let Some(start) = start {
            m.decode_seconds.record(start.elapsed());
        }
        m.decode_requests.increment(1);
        if out.is_err() {
            m.decode_errors.increment(1);
        }
        out
    }

    /// Times a chat request (render and encode) and counts its prompt ids
    /// (or its failure).
    pub(crate) fn render<T: PromptTokens>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let Some(m) = self.0.get() else {
            return f();
        };
        let start = Instant::now();
        let out = f();
        m.render_seconds.record(start.elapsed());
        m.render_requests.increment(1);
        match &out {
            Ok(enc) => m.render_tokens.record(enc.prompt_tokens() as f64),
            Err(_) => m.render_errors.increment(1),
        }
        out
    }

    /// Counts `n` ids fed to a stream.
    #[inline]
    pub(crate) fn stream_steps(&self, n: usize) {
        if let Some(m) = self.0.get() {
            m.stream_steps.increment(n as u64);
        }
    }

    /// Counts an id a stream skipped because it is outside the vocabulary.
    pub(crate) fn stream_unknown_id(&self) {
        if let Some(m) = self.0.get() {
            m.stream_unknown_ids.increment(1);
        }
    }

    /// Counts a generation that `stop` ended.
    pub(crate) fn stop(&self, stop: &impl StopIndex) {
        if let Some(m) = self.0.get() {
            m.stops[stop.stop_index()].increment(1);
        }
    }
}
