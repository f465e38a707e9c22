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

#[cfg(test)]
mod tests {
    use super::descriptions::DESCRIPTIONS;
    use super::load::{MAX_FAILED_SOURCES, failed_source_label};
    use super::*;
    use crate::decode::MatchedStop;
    use crate::error::ErrorKind;
    use metrics::Unit;
    use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
    use std::collections::HashMap;
    use std::collections::HashSet;

    /// `name{k=v,…}` → value, labels in registration order.
    fn series(snapshotter: &Snapshotter) -> HashMap<String, DebugValue> {
        snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .map(|(key, _, _, value)| {
                let labels: Vec<String> = key
                    .key()
                    .labels()
                    .map(|l| format!("{}={}", l.key(), l.value()))
                    .collect();
                (
                    format!("{}{{{}}}", key.key().name(), labels.join(",")),
                    value,
                )
            })
            .collect()
    }

    #[test]
    fn every_described_name_is_unique_and_has_the_rtok_prefix() {
        // The crate docs, README and the descriptions say "one in 16".
        assert_eq!(TIMING_SAMPLE, 16);
        let mut names = HashSet::new();
        for &(name, _, _, help) in DESCRIPTIONS {
            assert!(name.starts_with("rtok_"), "{name}");
            assert!(!help.is_empty(), "{name}");
            assert!(names.insert(name), "{name} twice");
        }
    }

    #[test]
    fn handles_bind_when_a_recorder_appears_and_describe_with_units() {
        let labels = Labels::new("org/model", "hf");
        // Built with no recorder (a test binary installs no global one).
        let metrics = Metrics::new(labels);
        assert!(metrics.0.slot.get().is_none());
        let _ = metrics.encode(|| Ok::<_, ()>(vec![1, 2, 3]));
        assert!(metrics.0.slot.get().is_none(), "nothing to bind to yet");

        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::with_local_recorder(&recorder, || {
            let _ = metrics.encode(|| Ok::<_, ()>(vec![1, 2]));
        });
        // Bound to that recorder: it keeps receiving outside the closure.
        let _ = metrics.encode(|| Err::<Vec<u32>, _>(()));
        metrics.stop(&MatchedStop::Eos { id: 2 });
        metrics.stream_steps(3);
        let seen = series(&snapshotter);
        let base = "tokenizer=org/model,backend=hf";
        assert_eq!(
            seen[&format!("rtok_encode_requests_total{{{base}}}")],
            DebugValue::Counter(2)
        );
        assert_eq!(
            seen[&format!("rtok_encode_errors_total{{{base}}}")],
            DebugValue::Counter(1)
        );
        assert_eq!(
            seen[&format!("rtok_stops_total{{{base},reason=eos}}")],
            DebugValue::Counter(1)
        );
        assert_eq!(
            seen[&format!("rtok_stream_steps_total{{{base}}}")],
            DebugValue::Counter(3)
        );
        // Described, with units.
        let units: HashMap<String, Option<Unit>> = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .map(|(key, unit, help, _)| {
                assert!(help.is_some(), "{}: no description", key.key().name());
                (key.key().name().to_owned(), unit)
            })
            .collect();
        assert_eq!(units["rtok_encode_duration_seconds"], Some(Unit::Seconds));
        assert_eq!(units["rtok_encode_requests_total"], Some(Unit::Count));
    }

    #[test]
    fn a_custom_backend_is_labelled_by_its_backend_name() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let metrics =
            metrics::with_local_recorder(&recorder, || Metrics::new(Labels::new("", "mock")));
        metrics.stream_unknown_id();
        assert_eq!(
            series(&snapshotter)["rtok_stream_unknown_ids_total{tokenizer=mock,backend=mock}"],
            DebugValue::Counter(1)
        );
    }

    #[test]
    fn failed_loads_count_by_source_and_kind() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::with_local_recorder(&recorder, || {
            let kind = ErrorKind::NotFound { what: "x".into() };
            record_load_error("metrics-test/missing", &kind);
            record_load_error("metrics-test/missing", &kind);
            let long = "é".repeat(200);
            record_load_error(&long, &kind);
        });
        let seen = series(&snapshotter);
        assert_eq!(
            seen["rtok_load_errors_total{tokenizer=metrics-test/missing,kind=not_found}"],
            DebugValue::Counter(2)
        );
        // Cut to 128 bytes, on a char boundary.
        let cut = format!(
            "rtok_load_errors_total{{tokenizer={},kind=not_found}}",
            "é".repeat(64)
        );
        assert_eq!(seen[&cut], DebugValue::Counter(1), "{seen:?}");
    }

    fn mock() -> crate::Tokenizer {
        crate::Tokenizer::from_engine(
            Arc::new(crate::backend::mock::MockTokenizer::default()),
            crate::Format::HfJson,
        )
    }

    #[test]
    fn renders_streams_and_stops_are_counted() {
        use crate::chat::{ChatRequest, Message};
        use crate::{DecodeStream, EncodeChatOptions, StopConfig, StopSequenceDecoder};
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let tok = metrics::with_local_recorder(&recorder, mock)
            .with_chat_template("{% for m in messages %}{{ m.content }}{% endfor %}")
            .unwrap();
        let request = ChatRequest::new(vec![Message::new("user", "hi!")]);
        let enc = tok
            .encode_chat(&request, &EncodeChatOptions::default())
            .unwrap();
        assert_eq!(enc.prompt_tokens, 3);
        let mut stream = DecodeStream::new(&tok, &enc.ids, false);
        stream.step(u32::from(b'a')).unwrap();
        stream.step_many(&[98, 99]).unwrap();
        // One generation per stop kind: a string, a stop id, EOS.
        let config = StopConfig {
            stop_strings: vec!["yz".into()],
            stop_token_ids: vec![u32::from(b'!')],
            ..StopConfig::default()
        };
        let mut stop = StopSequenceDecoder::new(&tok, &enc.ids, config).unwrap();
        for &id in b"xyz" {
            stop.process_token(u32::from(id)).unwrap();
        }
        assert!(matches!(
            stop.matched_stop(),
            Some(MatchedStop::String { .. })
        ));
        stop.reset();
        stop.process_token(u32::from(b'!')).unwrap();
        stop.reset();
        stop.process_token(257).unwrap();
        assert_eq!(stop.matched_stop(), Some(&MatchedStop::Eos { id: 257 }));

        let seen = series(&snapshotter);
        let base = "tokenizer=mock,backend=mock";
        let get = |name: &str| seen.get(&format!("{name}{{{base}}}"));
        assert_eq!(
            get("rtok_render_requests_total"),
            Some(&DebugValue::Counter(1))
        );
        assert_eq!(
            get("rtok_render_errors_total"),
            Some(&DebugValue::Counter(0))
        );
        assert!(
            matches!(get("rtok_render_tokens"), Some(DebugValue::Histogram(v)) if v.len() == 1 && v[0].into_inner() == 3.0)
        );
        assert!(
            matches!(get("rtok_render_duration_seconds"), Some(DebugValue::Histogram(v)) if v.len() == 1)
        );
        // 3 stream ids, then 3 + 1 + 1 through the stop decoder.
        assert_eq!(
            get("rtok_stream_steps_total"),
            Some(&DebugValue::Counter(8))
        );
        for (reason, n) in [
            ("eos", 1),
            ("token", 1),
            ("string", 1),
            ("token_sequence", 0),
        ] {
            assert_eq!(
                seen.get(&format!("rtok_stops_total{{{base},reason={reason}}}")),
                Some(&DebugValue::Counter(n)),
                "{reason}"
            );
        }
    }

    #[test]
    fn a_source_loaded_before_the_recorder_reports_once_one_is_there() {
        // A key of its own in the registry (the override file is only read
        // by the chat template, never here), so no other test binds it.
        let options = crate::LoadOptions::default()
            .with_chat_template("/nonexistent/rtok-metrics-test.jinja");
        let early = options.load("o200k_base").unwrap();
        early.encode("before any recorder", false).unwrap();

        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::with_local_recorder(&recorder, || {
            // A later load shares the first one's handle...
            let later = options.load("o200k_base").unwrap();
            assert!(later.same_handle(&early));
            // ... and reports now, its L0 cache too (a text long enough for it).
            later.encode(&"hello world ".repeat(30), false).unwrap();
        });
        // Bound: the early handle reports outside the closure too.
        early.decode(&[13225], false).unwrap();
        let seen = series(&snapshotter);
        let base = "tokenizer=o200k_base,backend=tiktoken";
        assert_eq!(
            seen.get(&format!("rtok_encode_requests_total{{{base}}}")),
            Some(&DebugValue::Counter(1)),
            "{seen:?}"
        );
        assert_eq!(
            seen.get(&format!("rtok_decode_requests_total{{{base}}}")),
            Some(&DebugValue::Counter(1))
        );
        assert_eq!(
            seen.get(&format!("rtok_cache_misses_total{{{base},cache=l0}}")),
            Some(&DebugValue::Counter(1))
        );
    }

    #[test]
    fn loads_and_failed_loads_are_counted_through_load_options() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let mut aliases = crate::ModelAliases::new();
        aliases
            .insert(
                "rtok-metrics-ghost",
                "/nonexistent/rtok-metrics/tokenizer.json",
            )
            .unwrap();
        metrics::with_local_recorder(&recorder, || {
            let options = crate::LoadOptions::default()
                .with_bypass_registry(true)
                .with_aliases(aliases);
            options.load("cl100k_base").unwrap();
            assert!(options.load("rtok-metrics-ghost").is_err());
            assert!(options.load("not a valid source!").is_err());
        });
        let seen = series(&snapshotter);
        assert_eq!(
            seen.get("rtok_loads_total{tokenizer=cl100k_base,backend=tiktoken}"),
            Some(&DebugValue::Counter(1)),
            "{seen:?}"
        );
        assert!(matches!(
            seen.get("rtok_load_duration_seconds{tokenizer=cl100k_base,backend=tiktoken}"),
            Some(DebugValue::Histogram(v)) if v.len() == 1
        ));
        // Labelled by the source the alias resolved to.
        assert_eq!(
            seen.get(
                "rtok_load_errors_total{tokenizer=/nonexistent/rtok-metrics/tokenizer.json,kind=not_found}"
            ),
            Some(&DebugValue::Counter(1)),
            "{seen:?}"
        );
        assert_eq!(
            seen.get("rtok_load_errors_total{tokenizer=not a valid source!,kind=invalid_source}"),
            Some(&DebugValue::Counter(1)),
            "{seen:?}"
        );
        let described: HashMap<String, (Option<Unit>, bool)> = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .map(|(k, unit, help, _)| (k.key().name().to_owned(), (unit, help.is_some())))
            .collect();
        assert_eq!(
            described["rtok_load_duration_seconds"],
            (Some(Unit::Seconds), true)
        );
        assert_eq!(
            described["rtok_load_errors_total"],
            (Some(Unit::Count), true)
        );
    }

    #[test]
    fn failed_load_labels_are_bounded() {
        let mut seen = HashSet::new();
        for i in 0..MAX_FAILED_SOURCES {
            assert_eq!(
                failed_source_label(&mut seen, &i.to_string()),
                i.to_string()
            );
        }
        assert_eq!(failed_source_label(&mut seen, "new"), "other");
        // One already seen keeps its own.
        assert_eq!(failed_source_label(&mut seen, "7"), "7");
    }
}
