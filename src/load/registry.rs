//! Process-wide sharing: concurrent loads of one source load once.
//!
//! Each key has a slot that one caller loads while the others wait on a
//! condition variable, never longer than
//! [`HubTimeouts::wait_for_other_load`](super::HubTimeouts) (a stuck load
//! cannot hold them forever). A failed load removes its slot, so failures
//! leave nothing behind and a later call retries; successful loads are kept
//! up to [`CAPACITY`] entries, the oldest evicted first.

use dashmap::DashMap;
use std::sync::{Arc, Condvar, LazyLock, Mutex, MutexGuard};
use std::time::Instant;

use super::LoadOptions;
use crate::error::{Error, Result};
use crate::tokenizer::Tokenizer;

/// Most loaded tokenizers kept for sharing (an evicted one stays valid for
/// its holders; the next load of its source loads again).
pub(crate) const CAPACITY: usize = 256;

enum State {
    /// Nobody has loaded it yet, or the last load failed.
    Empty,
    Loading,
    Ready(Tokenizer, Instant),
}

#[derive(Default)]
struct Slot {
    state: Mutex<Option<State>>,
    changed: Condvar,
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, Option<State>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Shards of [`REGISTRY`]: a fixed count, since `DashMap::new` sizes them
/// from `available_parallelism`, whose cgroup reads were 14 % of a small
/// model's first load; loads are rare, so few shards do.
const REGISTRY_SHARDS: usize = 8;

static REGISTRY: LazyLock<DashMap<String, Arc<Slot>>> =
    LazyLock::new(|| DashMap::with_shard_amount(REGISTRY_SHARDS));

/// The key: the source and every option that changes the result (not the token).
fn key(source: &str, o: &LoadOptions) -> String {
    format!(
        "{source}\u{0}{:?}\u{0}{:?}\u{0}{:?}\u{0}{:?}\u{0}{}\u{0}{:?}\u{0}{:?}\u{0}{}",
        o.revision,
        o.chat_template,
        o.cache_dir.clone().or_else(super::hub::cache_dir_from_env),
        o.special_tokens,
        o.keep_padding_and_truncation,
        o.endpoint,
        std::env::current_dir().ok(),
        o.prefer_tokenizer_json,
    )
}

/// Loads `source` once per key and shares the handle, with the handle-level
/// options ([`ParallelOptions`](crate::ParallelOptions) and
/// [`PromptCacheOptions`](crate::PromptCacheOptions)) applied.
///
/// Two levels: the parsed tokenizer is keyed by what changes parsing, so
/// handles that differ only in handle-level options parse once; the
/// configured handle is keyed by everything, so loads with equal options get
/// the same handle (and share one L0 prompt cache instead of each building
/// its own).
pub(super) fn load_shared(
    source: &str,
    options: &LoadOptions,
    load: impl FnOnce() -> Result<Tokenizer>,
) -> Result<Tokenizer> {
    let parsed_key = key(source, options);
    let handle_key = format!(
        "{parsed_key}\u{0}{:?}\u{0}{:?}\u{0}{:?}\u{0}{:?}",
        options.parallel, options.prompt_cache, options.control_tokens, options.chat_format
    );
    load_keyed(handle_key, source, options, || {
        let parsed = load_keyed(parsed_key, source, options, load)?;
        Ok(options.configure(&parsed))
    })
}

fn load_keyed(
    key: String,
    source: &str,
    options: &LoadOptions,
    load: impl FnOnce() -> Result<Tokenizer>,
) -> Result<Tokenizer> {
    let deadline = Instant::now() + options.hub.wait_for_other_load;
    let slot = Arc::clone(REGISTRY.entry(key.clone()).or_default().value());
    {
        let mut state = slot.lock();
        loop {
            match state.as_ref() {
                Some(State::Ready(tok, _)) => return Ok(tok.clone()),
                Some(State::Loading) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return Err(Error::config(format!(
                            "another load of {:?} is still running after {:?} (LoadOptions::hub.wait_for_other_load)",
                            crate::limits::short_quotes(source),
                            options.hub.wait_for_other_load
                        )));
                    }
                    state = slot
                        .changed
                        .wait_timeout(state, deadline - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
                None | Some(State::Empty) => break,
            }
        }
        *state = Some(State::Loading);
    }
    // The slot is marked; load without holding its lock.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(load));
    let mut state = slot.lock();
    let out = match result {
        Ok(Ok(tok)) => {
            *state = Some(State::Ready(tok.clone(), Instant::now()));
            Ok(tok)
        }
        Ok(Err(e)) => {
            *state = Some(State::Empty);
            Err(e)
        }
        Err(panic) => {
            *state = Some(State::Empty);
            drop(state);
            slot.changed.notify_all();
            REGISTRY.remove_if(&key, |_, v| Arc::ptr_eq(v, &slot));
            std::panic::resume_unwind(panic);
        }
    };
    drop(state);
    slot.changed.notify_all();
    if out.is_err() {
        // Nothing stays behind a failure (waiters hold their own Arc and retry).
        REGISTRY.remove_if(&key, |_, v| Arc::ptr_eq(v, &slot));
    } else if REGISTRY.len() > CAPACITY {
        evict_oldest();
    }
    out
}

/// Drops the oldest loaded entries until the registry is back at capacity.
fn evict_oldest() {
    let mut loaded: Vec<(Instant, String)> = REGISTRY
        .iter()
        .filter_map(|e| match e.value().lock().as_ref() {
            Some(State::Ready(_, at)) => Some((*at, e.key().clone())),
            _ => None,
        })
        .collect();
    let excess = REGISTRY.len().saturating_sub(CAPACITY);
    loaded.sort();
    for (_, key) in loaded.into_iter().take(excess) {
        REGISTRY.remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_leave_nothing_and_waiters_are_bounded() {
        let options = LoadOptions::default();
        for i in 0..100 {
            let source = format!("registry-test/failing-{i}");
            let err = load_shared(&source, &options, || Err(Error::config("no")));
            assert!(err.is_err());
            assert!(!REGISTRY.contains_key(&key(&source, &options)));
        }
        // A load that never finishes holds a waiter only as long as it allows.
        let source = "registry-test/stuck";
        let key = key(source, &options);
        let slot = Arc::clone(REGISTRY.entry(key.clone()).or_default().value());
        *slot.lock() = Some(State::Loading);
        let mut quick = LoadOptions::default();
        quick.hub.wait_for_other_load = std::time::Duration::from_millis(50);
        let start = Instant::now();
        let err = load_shared(source, &quick, || Err(Error::config("unreachable")))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("still running"), "{err}");
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
        REGISTRY.remove(&key);
    }
}
