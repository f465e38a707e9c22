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
    let metrics = metrics::with_local_recorder(&recorder, || Metrics::new(Labels::new("", "mock")));
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
    let options =
        crate::LoadOptions::default().with_chat_template("/nonexistent/rtok-metrics-test.jinja");
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
