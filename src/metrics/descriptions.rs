//! The one table of every metric's name, kind, unit and help text, and its description to the
//! recorder.

use metrics::{KeyName, SharedString, Unit};

/// What a metric is, for its description.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    Counter,
    Histogram,
}

/// Every metric the crate reports: name, kind, unit and help text. Described
/// each time a tokenizer binds its handles (and at each load), so whichever
/// recorder receives the series also has their HELP and units.
pub(super) const DESCRIPTIONS: &[(&str, Kind, Unit, &str)] = &[
    (
        "rtok_loads_total",
        Kind::Counter,
        Unit::Count,
        "Tokenizers loaded (a load the process-wide registry answers with a shared handle is not counted).",
    ),
    (
        "rtok_load_duration_seconds",
        Kind::Histogram,
        Unit::Seconds,
        "Time to load one tokenizer: resolve the source, read, parse and build it.",
    ),
    (
        "rtok_load_errors_total",
        Kind::Counter,
        Unit::Count,
        "Loads that failed, by error kind (label `kind`).",
    ),
    (
        "rtok_encode_requests_total",
        Kind::Counter,
        Unit::Count,
        "Encodes (encode, encode_with and their batch forms).",
    ),
    (
        "rtok_encode_errors_total",
        Kind::Counter,
        Unit::Count,
        "Encodes that failed.",
    ),
    (
        "rtok_encode_duration_seconds",
        Kind::Histogram,
        Unit::Seconds,
        "Time per encode, sampled: the first call of each thread, then one in 16.",
    ),
    (
        "rtok_encode_tokens",
        Kind::Histogram,
        Unit::Count,
        "Ids per successful encode.",
    ),
    (
        "rtok_decode_requests_total",
        Kind::Counter,
        Unit::Count,
        "Decodes.",
    ),
    (
        "rtok_decode_errors_total",
        Kind::Counter,
        Unit::Count,
        "Decodes that failed (unknown ids).",
    ),
    (
        "rtok_decode_duration_seconds",
        Kind::Histogram,
        Unit::Seconds,
        "Time per decode, sampled: the first call of each thread, then one in 16.",
    ),
    (
        "rtok_render_requests_total",
        Kind::Counter,
        Unit::Count,
        "Chat requests rendered and encoded (encode_chat, and count_chat and tokenize through it).",
    ),
    (
        "rtok_render_errors_total",
        Kind::Counter,
        Unit::Count,
        "Chat requests that failed to render or encode.",
    ),
    (
        "rtok_render_duration_seconds",
        Kind::Histogram,
        Unit::Seconds,
        "Time per chat request, render and encode together (every call).",
    ),
    (
        "rtok_render_tokens",
        Kind::Histogram,
        Unit::Count,
        "Prompt ids per successful chat request.",
    ),
    (
        "rtok_stream_steps_total",
        Kind::Counter,
        Unit::Count,
        "Ids fed to decode streams and stop decoders (DecodeStream::step and step_many, StopSequenceDecoder::process_token).",
    ),
    (
        "rtok_stream_unknown_ids_total",
        Kind::Counter,
        Unit::Count,
        "Ids outside the vocabulary that a stream skipped (UnknownIds::Skip).",
    ),
    (
        "rtok_stops_total",
        Kind::Counter,
        Unit::Count,
        "Generations a StopSequenceDecoder stopped, by what stopped them (label `reason`: eos, token, string, token_sequence).",
    ),
    (
        "rtok_parallel_encodes_total",
        Kind::Counter,
        Unit::Count,
        "Encodes that took the parallel (chunked) path.",
    ),
    (
        "rtok_parallel_retries_total",
        Kind::Counter,
        Unit::Count,
        "Chunk growths (reason no_cut) and rests encoded in one piece past four chunk lengths (grow_limit).",
    ),
    (
        "rtok_parallel_fallbacks_total",
        Kind::Counter,
        Unit::Count,
        "Parallel encodes that gave up and encoded the whole text sequentially, by reason.",
    ),
    (
        "rtok_cache_hits_total",
        Kind::Counter,
        Unit::Count,
        "Prompt-cache lookups answered from the cache (label `cache`: l0 or l1).",
    ),
    (
        "rtok_cache_misses_total",
        Kind::Counter,
        Unit::Count,
        "Prompt-cache lookups that found nothing to reuse.",
    ),
    (
        "rtok_cache_evictions_total",
        Kind::Counter,
        Unit::Count,
        "Prompt-cache entries evicted for size.",
    ),
    (
        "rtok_cache_bytes_reused_total",
        Kind::Counter,
        Unit::Bytes,
        "Text bytes whose ids came from a prompt cache.",
    ),
    (
        "rtok_cache_l1_tokens_reencoded_total",
        Kind::Counter,
        Unit::Count,
        "Cached ids the L1 prefix cache encoded again to find where a fresh encode agrees.",
    ),
    (
        "rtok_cache_l1_fallbacks_total",
        Kind::Counter,
        Unit::Count,
        "L1 lookups whose entry could not be cut into (the text was encoded in full).",
    ),
];

/// Describes every metric to the current recorder: cheap (a map insert per
/// name), and repeated on purpose, since `metrics` has no way to ask whether
/// a recorder has seen the descriptions.
pub(super) fn describe() {
    metrics::with_recorder(|recorder| {
        for &(name, kind, unit, help) in DESCRIPTIONS {
            let name = KeyName::from_const_str(name);
            let help = SharedString::const_str(help);
            match kind {
                Kind::Counter => recorder.describe_counter(name, Some(unit), help),
                Kind::Histogram => recorder.describe_histogram(name, Some(unit), help),
            }
        }
    });
}
