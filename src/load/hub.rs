//! Hub ids through the standard Hugging Face cache, downloading only what is missing.
//!
//! The cache lookup is our own (it must honour `HF_HUB_CACHE`, pinned commit
//! hashes and `HF_HUB_OFFLINE`, which hf-hub 0.5 does not); downloads go
//! through ureq with timeouts, retries and size caps, writing the same layout.

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

/// Whether `s` is a commit hash as the hub writes them (40 lowercase or upper hex digits).
fn is_commit_hash(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The snapshot folder of `repo` at `revision`, if the cache has a tokenizer there.
///
/// A branch or tag resolves through `refs/<revision>`, which must hold a
/// commit hash: a ref holding a path (`/abs`, `../x`) is an error, never joined.
fn cached_snapshot(cache: &Path, repo: &str, revision: &str) -> Result<Option<PathBuf>> {
    let folder = cache.join(format!("models--{}", repo.replace('/', "--")));
    let commit = if is_commit_hash(revision) {
        revision.to_owned()
    } else {
        let ref_file = folder.join("refs").join(revision);
        let Some(bytes) = crate::limits::read_optional(&ref_file, 1024).ok().flatten() else {
            return Ok(None);
        };
        let text = String::from_utf8_lossy(&bytes);
        let commit = text.trim();
        if !is_commit_hash(commit) {
            return Err(hub_error(
                repo,
                None,
                true,
                format!(
                    "{} does not hold a commit hash; the cache entry is refused",
                    ref_file.display()
                ),
            ));
        }
        commit.to_owned()
    };
    let snapshot = folder.join("snapshots").join(commit);
    Ok(pick_file(&snapshot).map(|_| snapshot))
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
    if let Some(snapshot) = cached_snapshot(&cache, repo, revision)? {
        return Ok(snapshot);
    }
    if offline {
        // The model is missing, not the hub: the same kind as a missing path.
        return Err(Error::new(ErrorKind::NotFound {
            what: format!(
                "{repo}@{revision} (not in the hub cache at {}, and offline mode is on: HF_HUB_OFFLINE)",
                cache.display()
            ),
        }));
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

/// The tokenizer files a repository may hold, in the loader's order.
const TOKENIZER_FILES: &[&str] = &[
    "tokenizer.json",
    "tokenizer.model",
    "original/tokenizer.model",
    "tiktoken.model",
];

/// Downloads the tokenizer and its companions into the standard cache layout
/// (`blobs/<etag>`, `snapshots/<commit>/<file>`, `refs/<revision>`).
///
/// Written on ureq rather than hf-hub's client, which has no timeouts: every
/// request here has connect, read and whole-request limits, transient
/// failures are retried with exponential backoff, and bodies are capped.
#[cfg(feature = "hub")]
fn download(cache: &Path, repo: &str, revision: &str, options: &LoadOptions) -> Result<PathBuf> {
    let client = http::Client::new(repo, options, token(options));
    let folder = cache.join(format!("models--{}", repo.replace('/', "--")));
    let mut found = None;
    let tekken_first = (!options.prefer_tokenizer_json).then_some(&super::TEKKEN_FILE);
    for file in tekken_first.into_iter().chain(TOKENIZER_FILES) {
        if let Some(got) = client.get(revision, file, crate::limits::MAX_TOKENIZER_JSON)? {
            found = Some((*file, got));
            break;
        }
    }
    // Every file answered 404: the repository or revision does not exist
    // (or holds no tokenizer), which is the request's model, not the hub.
    let (name, (commit, etag, body)) = found.ok_or_else(|| {
        Error::new(ErrorKind::NotFound {
            what: format!(
                "{repo}@{revision} on the hub (no such repository or revision, or no tokenizer file: tekken.json, tokenizer.json, tokenizer.model, tiktoken.model)"
            ),
        })
    })?;
    let snapshot = folder.join("snapshots").join(&commit);
    http::store(&folder, &snapshot, name, &etag, &body)
        .map_err(|e| hub_error(repo, Some(name), false, format!("writing the cache: {e}")))?;
    // Companions are optional (a 404 is fine), but a network failure fails
    // the load: a tokenizer without its config would load wrong, silently.
    let pinned = commit.as_str();
    for file in COMPANIONS {
        if let Some((_, etag, body)) = client.get(pinned, file, crate::limits::MAX_CONFIG_JSON)? {
            http::store(&folder, &snapshot, file, &etag, &body).map_err(|e| {
                hub_error(repo, Some(file), false, format!("writing the cache: {e}"))
            })?;
        }
    }
    if revision != commit {
        http::write_ref(&folder, revision, &commit)
            .map_err(|e| hub_error(repo, None, false, format!("writing the cache: {e}")))?;
    }
    Ok(snapshot)
}

#[cfg(feature = "hub")]
mod http {
    use std::path::Path;
    use std::time::Duration;

    use super::{LoadOptions, hub_error, is_commit_hash};
    use crate::error::{Error, ErrorKind, Result};

    /// One repository's requests, with the options' limits.
    pub(super) struct Client<'a> {
        repo: &'a str,
        agent: ureq::Agent,
        endpoint: String,
        token: Option<String>,
        retries: u32,
        backoff: Duration,
        /// Draw a progress bar (asked for, and stderr is a terminal).
        progress: bool,
    }

    /// What a failed attempt means.
    enum Failure {
        /// The file is not there (404).
        Absent,
        /// The repository is not there (or not visible to this token).
        NoRepo,
        /// Worth another try: timeouts, connection errors, 429, 5xx.
        Transient(String),
        /// Not worth retrying: 401/403, bad responses.
        Fatal(String),
    }

    impl<'a> Client<'a> {
        pub(super) fn new(repo: &'a str, options: &LoadOptions, token: Option<String>) -> Self {
            let t = &options.hub;
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .timeout_connect(Some(t.connect))
                .timeout_recv_response(Some(t.read))
                .timeout_per_read(Some(t.read))
                .timeout_global(Some(t.request))
                .http_status_as_error(false)
                .max_redirects(0)
                .build()
                .into();
            let endpoint = options
                .endpoint
                .clone()
                .or_else(|| std::env::var("HF_ENDPOINT").ok().filter(|e| !e.is_empty()))
                .unwrap_or_else(|| "https://huggingface.co".to_owned());
            Self {
                repo,
                agent,
                endpoint: endpoint.trim_end_matches('/').to_owned(),
                token,
                retries: t.retries,
                backoff: t.backoff,
                progress: options.progress && std::io::IsTerminal::is_terminal(&std::io::stderr()),
            }
        }

        /// `(commit, etag, body)` of `file` at `revision`; `None` when the
        /// repository has no such file.
        pub(super) fn get(
            &self,
            revision: &str,
            file: &str,
            limit: u64,
        ) -> Result<Option<(String, String, Vec<u8>)>> {
            let url = format!(
                "{}/{}/resolve/{}/{}",
                self.endpoint,
                self.repo,
                revision.replace('/', "%2F"),
                file
            );
            let mut wait = self.backoff;
            let mut attempt = 0;
            loop {
                match self.attempt(&url, limit) {
                    Ok(got) => return Ok(Some(got)),
                    Err(Failure::Absent) => return Ok(None),
                    Err(Failure::NoRepo) => {
                        return Err(Error::new(ErrorKind::NotFound {
                            what: format!(
                                "{}@{revision} on the hub (no such repository)",
                                self.repo
                            ),
                        }));
                    }
                    Err(Failure::Transient(_)) if attempt < self.retries => {
                        attempt += 1;
                        std::thread::sleep(wait);
                        wait = wait.saturating_mul(2).min(Duration::from_secs(30));
                    }
                    Err(Failure::Transient(why) | Failure::Fatal(why)) => {
                        let tries = attempt + 1;
                        return Err(hub_error(
                            self.repo,
                            Some(file),
                            false,
                            format!("{why} (after {tries} attempt(s))"),
                        ));
                    }
                }
            }
        }

        /// One request, following up to five redirects by hand: the commit
        /// and etag headers sit on the hub's own response, not the CDN's.
        fn attempt(&self, url: &str, limit: u64) -> Result<(String, String, Vec<u8>), Failure> {
            let mut url = url.to_owned();
            let mut commit = None;
            let mut etag = None;
            let origin = host_of(&self.endpoint).to_owned();
            for _ in 0..6 {
                let mut request = self.agent.get(&url);
                if let Some(token) = &self.token
                    && host_of(&url) == origin
                {
                    request = request.header("Authorization", format!("Bearer {token}"));
                }
                let mut response = request.call().map_err(transport)?;
                let header = |name: &str| {
                    response
                        .headers()
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .map(|v| {
                            v.trim()
                                .trim_start_matches("W/")
                                .trim_matches('"')
                                .to_owned()
                        })
                };
                commit = commit.or_else(|| header("x-repo-commit"));
                etag = etag
                    .or_else(|| header("x-linked-etag"))
                    .or_else(|| header("etag"));
                let status = response.status().as_u16();
                match status {
                    200 => {
                        let size = response.body().content_length();
                        let reader = response.body_mut().with_config().limit(limit).reader();
                        let body = self.read_body(reader, size, &url)?;
                        let commit = commit.filter(|c| is_commit_hash(c)).ok_or_else(|| {
                            Failure::Fatal("no commit hash in the response".into())
                        })?;
                        let etag = etag
                            .filter(|e| {
                                !e.is_empty()
                                    && e.len() <= 128
                                    && e.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                            })
                            .ok_or_else(|| {
                                Failure::Fatal("no usable etag in the response".into())
                            })?;
                        return Ok((commit, etag, body));
                    }
                    301 | 302 | 303 | 307 | 308 => {
                        let location = header("location").ok_or_else(|| {
                            Failure::Fatal(format!("HTTP {status} without a location"))
                        })?;
                        url = if location.starts_with('/') {
                            format!("{}{location}", self.endpoint)
                        } else {
                            location
                        };
                    }
                    404 => return Err(Failure::Absent),
                    // The hub answers 401 for a repository it will not
                    // confirm exists: the model is missing, not the token.
                    401 if header("x-error-code").as_deref() == Some("RepoNotFound") => {
                        return Err(Failure::NoRepo);
                    }
                    401 | 403 => {
                        return Err(Failure::Fatal(format!(
                            "HTTP {status} (a gated or private repository needs a token: LoadOptions::token or HF_TOKEN)"
                        )));
                    }
                    429 | 500..=599 => return Err(Failure::Transient(format!("HTTP {status}"))),
                    _ => return Err(Failure::Fatal(format!("HTTP {status}"))),
                }
            }
            Err(Failure::Fatal("too many redirects".into()))
        }
    }

    impl Client<'_> {
        /// Reads a response body, drawing a progress bar when one was asked
        /// for and stderr is a terminal (never in logs or pipes).
        fn read_body(
            &self,
            mut reader: impl std::io::Read,
            size: Option<u64>,
            url: &str,
        ) -> Result<Vec<u8>, Failure> {
            let file = url.rsplit('/').next().unwrap_or(url);
            let bar = self.progress.then(|| {
                let bar = indicatif::ProgressBar::with_draw_target(
                    size,
                    indicatif::ProgressDrawTarget::stderr(),
                );
                if let Ok(style) = indicatif::ProgressStyle::with_template(
                    "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}",
                ) {
                    bar.set_style(style.progress_chars("=> "));
                }
                bar.set_message(format!("{}/{file}", self.repo));
                bar
            });
            let mut body = Vec::with_capacity(
                size.map_or(0, |n| usize::try_from(n.min(1 << 26)).unwrap_or(0)),
            );
            let mut buf = [0u8; 64 * 1024];
            loop {
                let n = match reader.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        if let Some(bar) = &bar {
                            bar.abandon();
                        }
                        return Err(read_failure(e));
                    }
                };
                body.extend_from_slice(&buf[..n]);
                if let Some(bar) = &bar {
                    bar.inc(n as u64);
                }
            }
            if let Some(bar) = bar {
                bar.finish();
            }
            if size.is_some_and(|n| n != body.len() as u64) {
                return Err(Failure::Transient(format!(
                    "the body ended after {} of {} bytes",
                    body.len(),
                    size.unwrap_or(0)
                )));
            }
            Ok(body)
        }
    }

    /// A failed body read: over the limit is fatal, anything else may pass.
    fn read_failure(e: std::io::Error) -> Failure {
        match e.into_inner().map(|inner| inner.downcast::<ureq::Error>()) {
            Some(Ok(inner)) => transport(*inner),
            Some(Err(other)) => Failure::Transient(other.to_string()),
            None => Failure::Transient("the connection failed while reading".into()),
        }
    }

    fn host_of(url: &str) -> &str {
        let rest = url.split_once("://").map_or(url, |(_, r)| r);
        rest.split('/').next().unwrap_or(rest)
    }

    fn transport(e: ureq::Error) -> Failure {
        match e {
            ureq::Error::BodyExceedsLimit(n) => {
                Failure::Fatal(format!("the file is larger than the {} MiB limit", n >> 20))
            }
            ureq::Error::BadUri(_) | ureq::Error::Http(_) | ureq::Error::InvalidProxyUrl => {
                Failure::Fatal(e.to_string())
            }
            other => Failure::Transient(other.to_string()),
        }
    }

    /// Writes `blobs/<etag>` and links `snapshots/<commit>/<file>` to it,
    /// each through a temporary file and a rename.
    pub(super) fn store(
        folder: &Path,
        snapshot: &Path,
        file: &str,
        etag: &str,
        body: &[u8],
    ) -> std::io::Result<()> {
        let blobs = folder.join("blobs");
        std::fs::create_dir_all(&blobs)?;
        let blob = blobs.join(etag);
        write_atomic(&blob, body)?;
        let target = snapshot.join(file);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let _ = std::fs::remove_file(&target);
        #[cfg(unix)]
        {
            let depth = file.split('/').count() + 1;
            let relative = Path::new(&"../".repeat(depth)).join("blobs").join(etag);
            if std::os::unix::fs::symlink(&relative, &target).is_ok() {
                return Ok(());
            }
        }
        std::fs::copy(&blob, &target).map(|_| ())
    }

    pub(super) fn write_ref(folder: &Path, revision: &str, commit: &str) -> std::io::Result<()> {
        let path = folder.join("refs").join(revision);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        write_atomic(&path, commit.as_bytes())
    }

    fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, path)
    }
}

#[cfg(not(feature = "hub"))]
fn download(_cache: &Path, repo: &str, _revision: &str, options: &LoadOptions) -> Result<PathBuf> {
    let _ = (COMPANIONS, TOKENIZER_FILES, token(options));
    Err(hub_error(
        repo,
        None,
        false,
        "not in the cache, and this build has no `hub` feature to download it",
    ))
}
