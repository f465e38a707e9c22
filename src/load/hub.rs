//! Hub ids through the standard Hugging Face cache, downloading only what is missing.
//!
//! The cache lookup is our own (it must honour `HF_HUB_CACHE`, pinned commit
//! hashes and `HF_HUB_OFFLINE`, which hf-hub 0.5 does not); downloads go
//! through hf-hub's blocking client, which writes the same layout.

use std::path::{Path, PathBuf};

use super::{LoadOptions, pick_file};
use crate::error::{Error, ErrorKind, Result};

/// Files fetched besides the tokenizer itself, best effort.
const COMPANIONS: &[&str] = &[
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    "chat_template.json",
    "config.json",
    "generation_config.json",
];

/// The hub cache from the environment: `HF_HUB_CACHE`, `$HF_HOME/hub`, `~/.cache/huggingface/hub`.
pub(crate) fn cache_dir_from_env() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("HF_HUB_CACHE")
        .or_else(|| var("HF_HOME").map(|h| h.join("hub")))
        .or_else(|| var("HOME").map(|h| h.join(".cache").join("huggingface").join("hub")))
}

fn offline(options: &LoadOptions) -> bool {
    options.offline.unwrap_or_else(|| {
        std::env::var("HF_HUB_OFFLINE")
            .map(|v| {
                matches!(
                    v.trim().to_ascii_lowercase().as_str(),
                    "1" | "true" | "yes" | "on"
                )
            })
            .unwrap_or(false)
    })
}

fn hub_error(repo: &str, file: Option<&str>, offline: bool, detail: impl Into<String>) -> Error {
    Error::new(ErrorKind::Hub {
        repo: repo.to_owned(),
        file: file.map(str::to_owned),
        offline,
        detail: detail.into(),
    })
}

/// The snapshot folder of `repo` at `revision`, if the cache has a tokenizer there.
fn cached_snapshot(cache: &Path, repo: &str, revision: &str) -> Option<PathBuf> {
    let folder = cache.join(format!("models--{}", repo.replace('/', "--")));
    let commit = if revision.len() == 40 && revision.bytes().all(|b| b.is_ascii_hexdigit()) {
        revision.to_owned()
    } else {
        std::fs::read_to_string(folder.join("refs").join(revision))
            .ok()?
            .trim()
            .to_owned()
    };
    let snapshot = folder.join("snapshots").join(commit);
    pick_file(&snapshot).map(|_| snapshot)
}

/// Resolves a hub id to a local snapshot folder, downloading if allowed.
pub(crate) fn resolve(
    repo: &str,
    revision: Option<&str>,
    options: &LoadOptions,
) -> Result<PathBuf> {
    let offline = offline(options);
    let cache = options
        .cache_dir
        .clone()
        .or_else(cache_dir_from_env)
        .ok_or_else(|| {
            hub_error(
                repo,
                None,
                offline,
                "no hub cache: set HF_HOME or HF_HUB_CACHE",
            )
        })?;
    let revision = revision.unwrap_or("main");
    if let Some(snapshot) = cached_snapshot(&cache, repo, revision) {
        return Ok(snapshot);
    }
    if offline {
        return Err(hub_error(
            repo,
            None,
            true,
            format!(
                "revision {revision:?} is not in the cache at {} and offline mode is on (HF_HUB_OFFLINE)",
                cache.display()
            ),
        ));
    }
    download(&cache, repo, revision, options)
}

fn token(options: &LoadOptions) -> Option<String> {
    options
        .token
        .clone()
        .or_else(|| std::env::var("HF_TOKEN").ok().filter(|t| !t.is_empty()))
        .or_else(|| {
            let home = std::env::var_os("HF_HOME").map(PathBuf::from)?;
            let t = std::fs::read_to_string(home.join("token")).ok()?;
            Some(t.trim().to_owned()).filter(|t| !t.is_empty())
        })
}

/// The hub endpoint: the option, else `HF_ENDPOINT`, else hf-hub's default.
fn endpoint(options: &LoadOptions) -> Option<String> {
    options
        .endpoint
        .clone()
        .or_else(|| std::env::var("HF_ENDPOINT").ok())
        .map(|e| e.trim_end_matches('/').to_owned())
        .filter(|e| !e.is_empty())
}

#[cfg(feature = "hub")]
fn download(cache: &Path, repo: &str, revision: &str, options: &LoadOptions) -> Result<PathBuf> {
    use hf_hub::api::sync::ApiBuilder;
    use hf_hub::{Cache, Repo, RepoType};

    use std::io::IsTerminal;

    let mut builder = ApiBuilder::from_cache(Cache::new(cache.to_path_buf()))
        .with_token(token(options))
        // A progress bar is for a person watching, never for logs or pipes.
        .with_progress(options.progress && std::io::stderr().is_terminal());
    if let Some(endpoint) = endpoint(options) {
        builder = builder.with_endpoint(endpoint);
    }
    let api = builder
        .build()
        // The error text never includes the token: hf-hub reports the request, not headers.
        .map_err(|e| hub_error(repo, None, false, format!("client setup failed: {e}")))?;
    let handle = api.repo(Repo::with_revision(
        repo.to_owned(),
        RepoType::Model,
        revision.to_owned(),
    ));
    let mut tokenizer_file = None;
    let mut last_error = String::new();
    for file in [
        "tokenizer.json",
        "tokenizer.model",
        "original/tokenizer.model",
        "tiktoken.model",
    ] {
        match handle.get(file) {
            Ok(path) => {
                tokenizer_file = Some((file, path));
                break;
            }
            Err(e) => last_error = e.to_string(),
        }
    }
    let (name, path) = tokenizer_file.ok_or_else(|| {
        hub_error(
            repo,
            Some("tokenizer.json"),
            false,
            format!("no tokenizer file could be fetched: {last_error}"),
        )
    })?;
    for file in COMPANIONS {
        // Optional: a repo without them is fine.
        let _ = handle.get(file);
    }
    let mut dir = path.clone();
    for _ in 0..name.split('/').count() {
        dir.pop();
    }
    Ok(dir)
}

#[cfg(not(feature = "hub"))]
fn download(_cache: &Path, repo: &str, _revision: &str, options: &LoadOptions) -> Result<PathBuf> {
    let _ = (COMPANIONS, token(options), endpoint(options));
    Err(hub_error(
        repo,
        None,
        false,
        "not in the cache, and this build has no `hub` feature to download it",
    ))
}
