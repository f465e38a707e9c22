//! Factory loads: `rtok_loads_total`, their durations, and failed loads with bounded labels.

use metrics::{counter, histogram};
use std::collections::HashSet;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use super::{Labels, describe, recorder_installed};
use crate::error::ErrorKind;

/// Counts a factory load and its duration.
pub(crate) fn record_load(labels: &Labels, elapsed: Duration) {
    describe();
    counter!("rtok_loads_total", labels.base()).increment(1);
    histogram!("rtok_load_duration_seconds", labels.base()).record(elapsed);
}

/// Distinct `tokenizer` values `rtok_load_errors_total` takes before the
/// rest share `other`: a router that loads model names taken from clients
/// must not let them mint a series each.
pub(super) const MAX_FAILED_SOURCES: usize = 64;

/// Longest `tokenizer` value of a failed load, in bytes (cut on a char boundary).
const MAX_FAILED_SOURCE_BYTES: usize = 128;

static FAILED_SOURCES: LazyLock<Mutex<HashSet<String>>> =
    LazyLock::new(|| Mutex::new(HashSet::new()));

/// The `tokenizer` label of a failed load of `source`: the source, cut to
/// [`MAX_FAILED_SOURCE_BYTES`], or `other` once [`MAX_FAILED_SOURCES`]
/// others have failed (`seen`: the values given so far).
pub(super) fn failed_source_label(seen: &mut HashSet<String>, source: &str) -> String {
    let mut end = source.len().min(MAX_FAILED_SOURCE_BYTES);
    while !source.is_char_boundary(end) {
        end -= 1;
    }
    let label = &source[..end];
    if !seen.contains(label) {
        if seen.len() >= MAX_FAILED_SOURCES {
            return "other".to_owned();
        }
        seen.insert(label.to_owned());
    }
    label.to_owned()
}

/// Counts a failed load of `source` (as the alias resolved it, when it did).
pub(crate) fn record_load_error(source: &str, kind: &ErrorKind) {
    if !recorder_installed() {
        return;
    }
    let label = failed_source_label(
        &mut FAILED_SOURCES.lock().unwrap_or_else(|p| p.into_inner()),
        source,
    );
    describe();
    counter!("rtok_load_errors_total", "tokenizer" => label, "kind" => kind.metric_name())
        .increment(1);
}
