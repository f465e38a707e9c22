//! Process-wide sharing: concurrent loads of one source load once.
//!
//! Each key has its own mutex, held only while that key loads (startup, not a
//! hot path). Failures are not cached, so a later call can retry.

use dashmap::DashMap;
use std::sync::{Arc, LazyLock, Mutex};

use super::LoadOptions;
use crate::error::Result;
use crate::tokenizer::Tokenizer;

type Slot = Arc<Mutex<Option<Tokenizer>>>;

static REGISTRY: LazyLock<DashMap<String, Slot>> = LazyLock::new(DashMap::new);

/// The key: the source and every option that changes the result (not the token).
fn key(source: &str, o: &LoadOptions) -> String {
    format!(
        "{source}\u{0}{:?}\u{0}{:?}\u{0}{:?}\u{0}{:?}\u{0}{}\u{0}{:?}",
        o.revision,
        o.chat_template,
        o.cache_dir.clone().or_else(super::hub::cache_dir_from_env),
        o.special_tokens,
        o.keep_padding_and_truncation,
        std::env::current_dir().ok(),
    )
}

pub(super) fn load_shared(
    source: &str,
    options: &LoadOptions,
    load: impl FnOnce() -> Result<Tokenizer>,
) -> Result<Tokenizer> {
    let slot: Slot = REGISTRY.entry(key(source, options)).or_default().clone();
    let mut guard = match slot.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Some(tok) = guard.as_ref() {
        return Ok(tok.clone());
    }
    let tok = load()?;
    *guard = Some(tok.clone());
    Ok(tok)
}
