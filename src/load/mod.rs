//! From a source string to a [`Tokenizer`]: resolve, detect, build, share.

mod alias;
mod builder;
mod chat_only;
pub(crate) mod detect;
pub(crate) mod fuzz;
mod gguf;
pub(crate) mod hub;
mod registry;
mod source;
mod tekken;

/// Mistral's tokenizer file in a repo or folder.
pub(crate) const TEKKEN_FILE: &str = "tekken.json";
pub(crate) mod testing;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::backend::hf::HfBackend;
use crate::backend::tiktoken::encodings::{BuiltinEncoding, RankFamily};
use crate::backend::tiktoken::{SpecialRoles, TiktokenBackend, TiktokenSpec, ranks};
use crate::cache::PromptCacheOptions;
use crate::config::{self, TokenizerConfig};
use crate::encode::ParallelOptions;
use crate::error::{Error, ErrorKind, Result};
use crate::request::ChatFormat;
use crate::special::{ControlTokens, SpecialTokenPolicy, merge_eos_ids};
use crate::tokenizer::{Tokenizer, TokenizerInfo};
pub use alias::ModelAliases;
pub use detect::Format;
pub(crate) use source::Source;

/// Everything that changes how a tokenizer is found and built.
///
/// Built with `with_…` setters on [`LoadOptions::new`] (the defaults), read
/// back with the getters of the same names; non-exhaustive, so options can
/// be added without breaking callers.
///
/// ```no_run
/// use router_tokenizer::LoadOptions;
/// let tok = LoadOptions::new().with_revision("main").load("Qwen/Qwen3-8B")?;
/// # Ok::<(), router_tokenizer::Error>(())
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct LoadOptions {
    /// Hub revision (branch, tag or commit hash); a `@rev` suffix on the id wins.
    pub(crate) revision: Option<String>,
    /// A chat template file that replaces the one shipped with the tokenizer.
    pub(crate) chat_template: Option<PathBuf>,
    /// Hub token; defaults to `HF_TOKEN`, then `$HF_HOME/token`. Never logged.
    pub(crate) token: Option<String>,
    /// Never touch the network; defaults to `HF_HUB_OFFLINE`.
    pub(crate) offline: Option<bool>,
    /// The hub cache (the folder holding `models--org--name`); defaults to
    /// `HF_HUB_CACHE`, then `$HF_HOME/hub`, then `~/.cache/huggingface/hub`.
    pub(crate) cache_dir: Option<PathBuf>,
    /// How special-token text inside the input is encoded.
    pub(crate) special_tokens: SpecialTokenPolicy,
    /// Keep padding/truncation switched on in a `tokenizer.json` (off by default).
    pub(crate) keep_padding_and_truncation: bool,
    /// Kept for compatibility: downloads draw no progress bar (tokenizer files are small).
    pub(crate) progress: bool,
    /// Load a fresh copy instead of sharing the process-wide one.
    pub(crate) bypass_registry: bool,
    /// Model names mapped to sources, resolved before anything else (an alias
    /// may shadow a built-in OpenAI model name).
    pub(crate) aliases: ModelAliases,
    /// How long inputs are encoded in parallel (every tokenizer is wrapped;
    /// the default splits above a measured size on the global rayon pool).
    pub(crate) parallel: ParallelOptions,
    /// Hub endpoint; defaults to `HF_ENDPOINT`, then `https://huggingface.co`.
    pub(crate) endpoint: Option<String>,
    /// Hub network limits: timeouts and retries ([`HubTimeouts::default`]).
    pub(crate) hub: HubTimeouts,
    /// Prompt caches (the L0 exact cache; on by default, see
    /// [`PromptCacheOptions`]). Shared by every clone of the handle.
    pub(crate) prompt_cache: PromptCacheOptions,
    /// Load `tokenizer.json` where a folder or hub repo also has Mistral's
    /// `tekken.json` (by default `tekken.json` wins, as in vLLM: Mistral's
    /// converted `tokenizer.json` files once shipped a wrong pattern).
    pub(crate) prefer_tokenizer_json: bool,
    /// The chat format `encode_chat` uses when its options name none (see
    /// [`Tokenizer::chat_format`]); handle-level. `None`: the tokenizer's own.
    pub(crate) chat_format: Option<ChatFormat>,
    /// Corrections to the added tokens a chat request may not forge
    /// ([`ControlTokens`]); handle-level, like `parallel`.
    pub(crate) control_tokens: ControlTokens,
    /// Folders local paths may be loaded from (with the hub cache). `None`
    /// (the default) allows any path; `Some(vec![])` allows none, so a source
    /// string taken from a client can only name a hub id or an encoding.
    pub(crate) allowed_dirs: Option<Vec<PathBuf>>,
}

/// Network limits for hub downloads, part of [`LoadOptions`].
///
/// A request that connects, then stalls, fails after `read`; transient
/// failures (timeouts, connection errors, HTTP 429 and 5xx) are retried
/// `retries` times, waiting `backoff`, then twice that, and so on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HubTimeouts {
    /// Limit on opening a connection (default 10 s).
    pub connect: std::time::Duration,
    /// Limit on each read of a response (default 30 s).
    pub read: std::time::Duration,
    /// Limit on one request from start to end, body included (default 5 min).
    pub request: std::time::Duration,
    /// Retries of a transient failure (default 2).
    pub retries: u32,
    /// Wait before the first retry, doubled for each next one (default 500 ms).
    pub backoff: std::time::Duration,
    /// How long a load waits for a concurrent load of the same source before
    /// it fails (default 10 min). A stuck load never holds others longer.
    pub wait_for_other_load: std::time::Duration,
}

impl Default for HubTimeouts {
    fn default() -> Self {
        use std::time::Duration;
        Self {
            connect: Duration::from_secs(10),
            read: Duration::from_secs(30),
            request: Duration::from_secs(300),
            retries: 2,
            backoff: Duration::from_millis(500),
            wait_for_other_load: Duration::from_secs(600),
        }
    }
}

impl HubTimeouts {
    /// Sets every network limit: `connect`, `read`, `request` (each per request) and `retries`.
    pub fn new(
        connect: std::time::Duration,
        read: std::time::Duration,
        request: std::time::Duration,
        retries: u32,
    ) -> Self {
        Self {
            connect,
            read,
            request,
            retries,
            ..Self::default()
        }
    }

    /// With another wait for a concurrent load of the same source.
    pub fn with_wait_for_other_load(mut self, wait: std::time::Duration) -> Self {
        self.wait_for_other_load = wait;
        self
    }

    /// With another first retry wait.
    pub fn with_backoff(mut self, backoff: std::time::Duration) -> Self {
        self.backoff = backoff;
        self
    }
}

/// Never prints the token.
impl std::fmt::Debug for LoadOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadOptions")
            .field("revision", &self.revision)
            .field("chat_template", &self.chat_template)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("offline", &self.offline)
            .field("cache_dir", &self.cache_dir)
            .field("special_tokens", &self.special_tokens)
            .field(
                "keep_padding_and_truncation",
                &self.keep_padding_and_truncation,
            )
            .field("progress", &self.progress)
            .field("bypass_registry", &self.bypass_registry)
            .field("aliases", &self.aliases)
            .field("parallel", &self.parallel)
            .field("endpoint", &self.endpoint)
            .field("hub", &self.hub)
            .field("prompt_cache", &self.prompt_cache)
            .field("allowed_dirs", &self.allowed_dirs)
            .field("control_tokens", &self.control_tokens)
            .field("prefer_tokenizer_json", &self.prefer_tokenizer_json)
            .field("chat_format", &self.chat_format)
            .finish()
    }
}

impl LoadOptions {
    /// Loads the tokenizer named by `source`, blocking.
    ///
    /// Concurrent loads of the same source with the same options happen once
    /// and share the handle.
    pub fn load(&self, source: &str) -> Result<Tokenizer> {
        let mut label = source;
        let loaded = self.load_counted(source, &mut label);
        if let Err(e) = &loaded {
            crate::metrics::record_load_error(label, e.kind());
        }
        loaded
    }

    /// [`load`](Self::load), setting `label` to the source an alias resolved
    /// to (the `tokenizer` label of a failure, as of the tokenizer's series).
    fn load_counted<'a>(&'a self, source: &'a str, label: &mut &'a str) -> Result<Tokenizer> {
        self.parallel.check()?;
        let resolved = self.aliases.resolve(source)?;
        *label = resolved;
        if let Some(allowed) = &self.allowed_dirs {
            self.check_allowed(resolved, allowed)?;
        }
        let tokenizer = if self.bypass_registry {
            self.load_uncached(resolved).map(|tok| self.configure(&tok))
        } else {
            registry::load_shared(resolved, self, || self.load_uncached(resolved))
        };
        tokenizer.map_err(|e| {
            if resolved == source {
                return e;
            }
            e.through_alias(source, resolved)
        })
    }

    /// `tok` with this load's handle-level options: parallelism, prompt
    /// caches, control tokens.
    pub(crate) fn configure(&self, tok: &Tokenizer) -> Tokenizer {
        let tok = tok
            .with_parallel(self.parallel.clone())
            .with_prompt_cache(self.prompt_cache.clone())
            .with_control_tokens(self.control_tokens.clone());
        match self.chat_format {
            Some(format) => tok.with_chat_format(format),
            None => tok,
        }
    }

    /// Loads on the caller's tokio runtime (file reads and parsing run in
    /// `spawn_blocking`). The crate never creates a runtime of its own.
    pub async fn load_async(&self, source: &str) -> Result<Tokenizer> {
        let options = self.clone();
        let source = source.to_owned();
        tokio::task::spawn_blocking(move || options.load(&source))
            .await
            .map_err(|e| Error::config(format!("load task failed: {e}")))?
    }

    /// With [`allowed_dirs`](Self::allowed_dirs) set, a path source must lie
    /// (symlinks resolved) inside one of them or inside the hub cache.
    fn check_allowed(&self, source: &str, allowed: &[PathBuf]) -> Result<()> {
        let Source::Path(path) = Source::parse(source, self)? else {
            return Ok(());
        };
        let inside = |dir: &Path| {
            let (Ok(dir), Ok(path)) = (dir.canonicalize(), path.canonicalize()) else {
                return false;
            };
            path.starts_with(dir)
        };
        let cache = self.cache_dir.clone().or_else(hub::cache_dir_from_env);
        if allowed
            .iter()
            .map(PathBuf::as_path)
            .chain(cache.as_deref())
            .any(inside)
        {
            return Ok(());
        }
        Err(Error::new(ErrorKind::InvalidSource {
            given: crate::limits::short_quotes(source),
            reason:
                "local paths outside LoadOptions::allowed_dirs and the hub cache are not allowed"
                    .into(),
        }))
    }

    fn load_uncached(&self, source: &str) -> Result<Tokenizer> {
        let start = Instant::now();
        let tokenizer = match Source::parse(source, self)? {
            Source::Path(path) => self.load_path(&path, source)?,
            Source::Builtin(encoding) => self.load_builtin(encoding, source)?,
            Source::Hub { repo, revision } => {
                let dir = hub::resolve(&repo, revision.as_deref(), self)?;
                self.load_dir(&dir, source)?
            }
            Source::HubFile {
                repo,
                revision,
                file,
            } => {
                let dir = hub::resolve(&repo, revision.as_deref(), self)?;
                self.load_gguf(&gguf::file_in_snapshot(&dir, &repo, &file)?, source)?
            }
        };
        crate::metrics::record_load(tokenizer.metrics().labels(), start.elapsed());
        Ok(tokenizer)
    }

    fn load_builtin(&self, encoding: BuiltinEncoding, source: &str) -> Result<Tokenizer> {
        let backend = TiktokenBackend::new(encoding.spec()?, self.special_tokens)?;
        let eos = merge_eos_ids(
            &[],
            &[],
            crate::backend::Tokenizer::special_tokens(&backend)
                .eos
                .as_ref()
                .map(|t| t.id),
        );
        Ok(Tokenizer::build(
            Arc::new(backend),
            TokenizerInfo {
                source: source.to_owned(),
                format: Format::Tiktoken,
                dir: None,
                eos_token_ids: eos,
                config: None,
                chat_template_override: self.chat_template.clone(),
                tekken_version: None,
            },
        ))
    }

    fn load_path(&self, path: &Path, source: &str) -> Result<Tokenizer> {
        if path.is_dir() {
            return self.load_dir(path, source);
        }
        let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        self.load_file(path, &dir, source)
    }

    /// Picks the tokenizer file in a folder: `tekken.json` (unless
    /// [`prefer_tokenizer_json`](Self::prefer_tokenizer_json)), `tokenizer.json`,
    /// then `tokenizer.model` (sniffed), then `tiktoken.model` / `*.tiktoken`, then `*.gguf`.
    fn load_dir(&self, dir: &Path, source: &str) -> Result<Tokenizer> {
        let file = pick_file_for(dir, self.prefer_tokenizer_json).ok_or_else(|| {
            Error::new(ErrorKind::NotFound {
                what: format!(
                    "{}: no tekken.json, tokenizer.json, tokenizer.model, *.tiktoken or *.gguf",
                    dir.display()
                ),
            })
        })?;
        if file.extension().is_some_and(|e| e == "gguf") {
            gguf::check_unambiguous(dir, source)?;
        }
        self.load_file(&file, dir, source)
    }

    fn load_file(&self, file: &Path, dir: &Path, source: &str) -> Result<Tokenizer> {
        if gguf::is_gguf(file) {
            return self.load_gguf(file, source);
        }
        let bytes = crate::limits::read_capped_by(file, DETECT_HEAD, |head| {
            detect::detect(head).map_or(crate::limits::MAX_TOKENIZER_JSON, detect::max_file_bytes)
        })?;
        let format = detect::detect(&bytes[..bytes.len().min(DETECT_HEAD)]).ok_or_else(|| {
            Error::new(ErrorKind::UnsupportedFormat {
                path: file.to_path_buf(),
                detected: "unknown content (not JSON, GGUF, tiktoken ranks or SentencePiece)"
                    .into(),
            })
        })?;
        // Configs sit beside the file, or one level up for `original/tokenizer.model`.
        let config_dir = if dir.join("tokenizer_config.json").exists() {
            dir.to_path_buf()
        } else {
            dir.parent()
                .filter(|p| p.join("tokenizer_config.json").exists())
                .map_or_else(|| dir.to_path_buf(), Path::to_path_buf)
        };
        let config = TokenizerConfig::read_dir(&config_dir)?;
        let mut tekken_version = None;
        let backend: Arc<dyn crate::backend::Tokenizer> = match format {
            Format::HfJson => {
                let text = std::str::from_utf8(&bytes)
                    .map_err(|e| Error::parse(file, format!("not UTF-8: {e}")))?;
                let text = text.strip_prefix('\u{feff}').unwrap_or(text);
                Arc::new(HfBackend::from_json(
                    file,
                    text,
                    &config,
                    self.special_tokens,
                    self.keep_padding_and_truncation,
                )?)
            }
            Format::Tiktoken => Arc::new(self.tiktoken_from_ranks(
                file,
                &bytes,
                &config,
                &config_dir.join("tokenizer_config.json"),
            )?),
            Format::SentencePiece => {
                let model = crate::backend::sentencepiece::SentencePieceModel::from_bytes(&bytes)
                    .map_err(|e| Error::parse(file, format!("SentencePiece model: {e}")))?;
                Arc::new(crate::backend::sentencepiece::SpmBackend::new(
                    model,
                    &config,
                    self.special_tokens,
                )?)
            }
            // Sniffed above; reached only if the file changed in between.
            Format::Gguf => return self.load_gguf(file, source),
            // mistral-common never parses special-token text.
            Format::Tekken => {
                let tekken = tekken::read(file, &bytes)?;
                tekken_version = Some(tekken.version);
                Arc::new(TiktokenBackend::new(
                    tekken.spec,
                    SpecialTokenPolicy::PlainText,
                )?)
            }
        };
        let tokenizer_eos = backend.special_tokens().eos.as_ref().map(|t| t.id);
        let eos = merge_eos_ids(
            &config::eos_ids(&config_dir, "generation_config.json")?,
            &config::eos_ids(&config_dir, "config.json")?,
            tokenizer_eos,
        );
        Ok(Tokenizer::build(
            backend,
            TokenizerInfo {
                source: source.to_owned(),
                format,
                dir: Some(config_dir),
                eos_token_ids: eos,
                config: config.raw.map(Arc::new),
                chat_template_override: self.chat_template.clone(),
                tekken_version,
            },
        ))
    }

    /// A rank file; specials and roles come from `tokenizer_config.json` when it
    /// lists them, else from the family recognised by the rank count.
    fn tiktoken_from_ranks(
        &self,
        file: &Path,
        bytes: &[u8],
        config: &TokenizerConfig,
        config_file: &Path,
    ) -> Result<TiktokenBackend> {
        let ranks = ranks::parse(file, bytes)?;
        check_single_bytes(file, &ranks)?;
        let family = RankFamily::from_rank_count(ranks.len()).ok_or_else(|| {
            Error::new(ErrorKind::UnsupportedFormat {
                path: file.to_path_buf(),
                detected: format!(
                    "tiktoken ranks of an unknown family ({} ranks); the pre-tokenizer regex cannot be inferred",
                    ranks.len()
                ),
            })
        })?;
        let (specials, roles) = if config.added_tokens.is_empty() {
            family.default_specials()?
        } else {
            let specials: Vec<(String, u32)> = config
                .added_tokens
                .iter()
                .map(|(id, content, _)| (content.clone(), *id))
                .collect();
            check_added_ids(config_file, &ranks, &specials)?;
            let roles = SpecialRoles {
                bos: config.special_token("bos"),
                eos: config.special_token("eos"),
                unk: config.special_token("unk"),
                pad: config.special_token("pad"),
            };
            (specials, roles)
        };
        let add_bos = match family {
            RankFamily::Llama3 if config.add_bos_token != Some(false) => roles
                .bos
                .as_ref()
                .and_then(|b| specials.iter().find(|(c, _)| c == b))
                .map(|(_, id)| *id),
            _ => None,
        };
        TiktokenBackend::new(
            TiktokenSpec {
                ranks,
                specials,
                pattern: family.pattern().into(),
                roles,
                add_bos,
                runs_apart: false,
            },
            self.special_tokens,
        )
    }
}

/// tiktoken indexes its ranks by single bytes and panics on a missing one.
fn check_single_bytes(file: &Path, ranks: &rustc_hash::FxHashMap<Vec<u8>, u32>) -> Result<()> {
    match (0..=255u8).find(|b| !ranks.contains_key(&[*b][..])) {
        Some(byte) => Err(Error::parse(
            file,
            format!("no rank for the single byte 0x{byte:02X} (tiktoken needs all 256)"),
        )),
        None => Ok(()),
    }
}

/// `added_tokens_decoder` ids beside a rank file: in proportion with the
/// file (tables are sized by the largest id), and no id given to two tokens.
fn check_added_ids(
    config_file: &Path,
    ranks: &rustc_hash::FxHashMap<Vec<u8>, u32>,
    specials: &[(String, u32)],
) -> Result<()> {
    let max_id = specials
        .iter()
        .map(|(_, id)| u64::from(*id))
        .max()
        .unwrap_or(0);
    crate::limits::check_id(
        config_file,
        "added_tokens_decoder",
        max_id,
        ranks.len() + specials.len(),
    )?;
    let rank_ids: rustc_hash::FxHashSet<u32> = ranks.values().copied().collect();
    let mut seen: rustc_hash::FxHashMap<u32, &str> = rustc_hash::FxHashMap::default();
    for (content, id) in specials {
        let clash = if rank_ids.contains(id) {
            Some("a token of the rank file".to_owned())
        } else {
            seen.insert(*id, content)
                .filter(|other| *other != content)
                .map(|other| format!("{other:?}"))
        };
        if let Some(other) = clash {
            return Err(Error::parse(
                config_file,
                format!("added_tokens_decoder: two tokens share id {id} ({content:?} and {other})"),
            ));
        }
    }
    Ok(())
}

/// How much of a file format detection reads.
const DETECT_HEAD: usize = 512;

/// The tokenizer file a folder holds, in priority order.
pub(crate) fn pick_file(dir: &Path) -> Option<PathBuf> {
    pick_file_for(dir, false)
}

/// [`pick_file`], with `tekken.json` first (as vLLM picks it for Mistral
/// repos) unless `prefer_tokenizer_json`.
fn pick_file_for(dir: &Path, prefer_tokenizer_json: bool) -> Option<PathBuf> {
    let tekken = dir.join(TEKKEN_FILE);
    if !prefer_tokenizer_json && tekken.is_file() {
        return Some(tekken);
    }
    let json = dir.join("tokenizer.json");
    if json.is_file() {
        return Some(json);
    }
    if tekken.is_file() {
        return Some(tekken);
    }
    for name in [
        "tokenizer.model",
        "original/tokenizer.model",
        "tiktoken.model",
    ] {
        let p = dir.join(name);
        if p.is_file() {
            return Some(p);
        }
    }
    let by_ext = |ext: &str| -> Option<PathBuf> {
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == ext))
            .collect();
        found.sort();
        found.into_iter().next()
    };
    by_ext("tiktoken").or_else(|| by_ext("gguf"))
}

/// Loads a tokenizer with default options: a path, a tiktoken encoding name,
/// an OpenAI model name, or a hub id `org/name[@revision]`.
///
/// ```no_run
/// let tok = router_tokenizer::create_tokenizer("Qwen/Qwen3-8B")?;
/// let ids = tok.encode("Hello!", false)?;
/// # Ok::<(), router_tokenizer::Error>(())
/// ```
pub fn create_tokenizer(source: &str) -> Result<Tokenizer> {
    LoadOptions::default().load(source)
}

/// [`create_tokenizer`] on the caller's tokio runtime.
pub async fn create_tokenizer_async(source: &str) -> Result<Tokenizer> {
    LoadOptions::default().load_async(source).await
}
