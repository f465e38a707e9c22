//! From a source string to a [`Tokenizer`]: resolve, detect, build, share.

mod chat_only;
pub(crate) mod detect;
pub(crate) mod hub;
mod registry;
mod source;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::backend::hf::HfBackend;
use crate::backend::tiktoken::encodings::{BuiltinEncoding, RankFamily};
use crate::backend::tiktoken::{SpecialRoles, TiktokenBackend, TiktokenSpec, ranks};
use crate::config::{self, TokenizerConfig};
use crate::encode::ParallelOptions;
use crate::error::{Error, ErrorKind, Result};
use crate::special::{SpecialTokenPolicy, merge_eos_ids};
use crate::tokenizer::{Tokenizer, TokenizerInfo};
pub use detect::Format;
pub(crate) use source::Source;

/// Everything that changes how a tokenizer is found and built.
///
/// ```no_run
/// use router_tokenizer::LoadOptions;
/// let tok = LoadOptions { revision: Some("main".into()), ..LoadOptions::default() }
///     .load("Qwen/Qwen3-8B")?;
/// # Ok::<(), router_tokenizer::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Hub revision (branch, tag or commit hash); a `@rev` suffix on the id wins.
    pub revision: Option<String>,
    /// A chat template file that replaces the one shipped with the tokenizer.
    pub chat_template: Option<PathBuf>,
    /// Hub token; defaults to `HF_TOKEN`, then `$HF_HOME/token`. Never logged.
    pub token: Option<String>,
    /// Never touch the network; defaults to `HF_HUB_OFFLINE`.
    pub offline: Option<bool>,
    /// The hub cache (the folder holding `models--org--name`); defaults to
    /// `HF_HUB_CACHE`, then `$HF_HOME/hub`, then `~/.cache/huggingface/hub`.
    pub cache_dir: Option<PathBuf>,
    /// How special-token text inside the input is encoded.
    pub special_tokens: SpecialTokenPolicy,
    /// Keep padding/truncation switched on in a `tokenizer.json` (off by default).
    pub keep_padding_and_truncation: bool,
    /// Show a progress bar while downloading.
    pub progress: bool,
    /// Load a fresh copy instead of sharing the process-wide one.
    pub bypass_registry: bool,
    /// How long inputs are encoded in parallel (every tokenizer is wrapped;
    /// the default splits above a measured size on the global rayon pool).
    pub parallel: ParallelOptions,
}

impl LoadOptions {
    /// Loads the tokenizer named by `source`, blocking.
    ///
    /// Concurrent loads of the same source with the same options happen once
    /// and share the handle.
    pub fn load(&self, source: &str) -> Result<Tokenizer> {
        let tokenizer = if self.bypass_registry {
            self.load_uncached(source)?
        } else {
            registry::load_shared(source, self, || self.load_uncached(source))?
        };
        Ok(tokenizer.with_parallel(self.parallel.clone()))
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

    fn load_uncached(&self, source: &str) -> Result<Tokenizer> {
        let start = Instant::now();
        let tokenizer = match Source::parse(source, self)? {
            Source::Path(path) => self.load_path(&path, source)?,
            Source::Builtin(encoding) => self.load_builtin(encoding, source)?,
            Source::Hub { repo, revision } => {
                let dir = hub::resolve(&repo, revision.as_deref(), self)?;
                self.load_dir(&dir, source)?
            }
        };
        crate::metrics::record_load(tokenizer.backend_name(), start.elapsed());
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

    /// Picks the tokenizer file in a folder: `tokenizer.json`, then
    /// `tokenizer.model` (sniffed), then `tiktoken.model` / `*.tiktoken`, then `*.gguf`.
    fn load_dir(&self, dir: &Path, source: &str) -> Result<Tokenizer> {
        let file = pick_file(dir).ok_or_else(|| {
            Error::new(ErrorKind::NotFound {
                what: format!(
                    "{}: no tokenizer.json, tokenizer.model, *.tiktoken or *.gguf",
                    dir.display()
                ),
            })
        })?;
        self.load_file(&file, dir, source)
    }

    fn load_file(&self, file: &Path, dir: &Path, source: &str) -> Result<Tokenizer> {
        let bytes = std::fs::read(file).map_err(|e| Error::io(file, e))?;
        let format = detect::detect(&bytes[..bytes.len().min(512)]).ok_or_else(|| {
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
            Format::Tiktoken => Arc::new(self.tiktoken_from_ranks(file, &bytes, &config)?),
            Format::SentencePiece => {
                let model = crate::backend::sentencepiece::SentencePieceModel::from_bytes(&bytes)
                    .map_err(|e| Error::parse(file, format!("SentencePiece model: {e}")))?;
                Arc::new(crate::backend::sentencepiece::SpmBackend::new(
                    model,
                    &config,
                    self.special_tokens,
                )?)
            }
            Format::Gguf => {
                return Err(Error::new(ErrorKind::UnsupportedFormat {
                    path: file.to_path_buf(),
                    detected: format!("{format} (backend not built yet)"),
                }));
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
    ) -> Result<TiktokenBackend> {
        let ranks = ranks::parse(file, bytes)?;
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
                pattern: family.pattern(),
                roles,
                add_bos,
            },
            self.special_tokens,
        )
    }
}

/// The tokenizer file a folder holds, in priority order.
pub(crate) fn pick_file(dir: &Path) -> Option<PathBuf> {
    let json = dir.join("tokenizer.json");
    if json.is_file() {
        return Some(json);
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
