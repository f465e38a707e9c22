//! The chat template of a source without its vocabulary.
//!
//! Rendering needs only the template and the special tokens' text (`tokenizer_config.json`,
//! `special_tokens_map.json`, `chat_template.jinja`/`.json`), a few kilobytes; building the
//! vocabulary of a real model takes 1–3 s. A router (or `rtok chat`) that only renders
//! resolves the source as [`LoadOptions::load`] does and reads just those files.

use std::path::{Path, PathBuf};

use super::source::Source;
use super::{LoadOptions, gguf, hub};
use crate::chat::{ChatTemplate, ChatTemplateError, TemplateSpecialTokens, load_chat_template};
use crate::error::{Error, Result};

/// Where a source keeps its template.
enum ConfigHome {
    /// The folder of `tokenizer_config.json` and its companions.
    Dir(PathBuf),
    /// A built-in tiktoken encoding: no template.
    Builtin,
    /// A GGUF file (the template is in its metadata), or a SentencePiece
    /// model with no `tokenizer_config.json` (the special tokens are its
    /// pieces): read by a full load.
    Model,
}

impl LoadOptions {
    /// The chat template of `source` (a path, a hub id, an alias or an encoding name, resolved
    /// as [`LoadOptions::load`] resolves it), compiled with its special tokens, without loading
    /// the vocabulary (a GGUF file is the exception: its template is in the metadata the full
    /// load reads). [`LoadOptions::with_chat_template`] overrides the template file as it does for
    /// a full load. Renders are identical to `Tokenizer::apply_chat_template`'s.
    pub fn load_chat_template(&self, source: &str) -> Result<ChatTemplate> {
        let dir = match self.config_home(source)? {
            ConfigHome::Dir(dir) => dir,
            ConfigHome::Model => return Ok(self.load(source)?.chat_template()?.clone()),
            ConfigHome::Builtin => {
                if let Some(file) = &self.chat_template {
                    let text = crate::limits::read_capped(file, crate::limits::MAX_CONFIG_JSON)?;
                    let text = String::from_utf8(text)
                        .map_err(|e| Error::parse(file, format!("not UTF-8: {e}")))?;
                    return Ok(ChatTemplate::from_text(
                        &text,
                        &TemplateSpecialTokens::new(),
                    )?);
                }
                return Err(ChatTemplateError::NoTemplate {
                    detail: format!("{source} is a tiktoken encoding, which has no chat template"),
                }
                .into());
            }
        };
        let config = crate::config::read_json(&dir.join("tokenizer_config.json"))?;
        Ok(load_chat_template(
            &dir,
            self.chat_template.as_deref(),
            config.as_ref(),
        )?)
    }

    /// The special tokens' text of `source` (what a template sees as `bos_token`, ...),
    /// without loading the vocabulary; empty for a tiktoken encoding.
    pub fn load_special_tokens(&self, source: &str) -> Result<TemplateSpecialTokens> {
        match self.config_home(source)? {
            ConfigHome::Builtin => Ok(TemplateSpecialTokens::new()),
            ConfigHome::Model => {
                let tok = self.load(source)?;
                let mut specials = TemplateSpecialTokens::new();
                for (role, token) in tok.special_tokens().named() {
                    specials.set(format!("{role}_token"), token.content.clone());
                }
                Ok(specials)
            }
            ConfigHome::Dir(dir) => {
                let config = crate::config::read_json(&dir.join("tokenizer_config.json"))?;
                Ok(TemplateSpecialTokens::from_dir(&dir, config.as_ref())?)
            }
        }
    }

    /// Where `source`'s template lives; aliases and [`LoadOptions::allowed_dirs`] apply as
    /// they do to a full load.
    fn config_home(&self, source: &str) -> Result<ConfigHome> {
        let source = self.aliases.resolve(source)?;
        if let Some(allowed) = &self.allowed_dirs {
            self.check_allowed(source, allowed)?;
        }
        let mut file = None;
        let dir = match Source::parse(source, self)? {
            Source::Path(path) if path.is_dir() => path,
            Source::Path(path) if gguf::is_gguf(&path) => return Ok(ConfigHome::Model),
            Source::Path(path) => {
                let dir = path
                    .parent()
                    .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
                file = Some(path);
                dir
            }
            Source::Hub { repo, revision } => hub::resolve(&repo, revision.as_deref(), self)?,
            Source::HubFile { .. } => return Ok(ConfigHome::Model),
            Source::Builtin(_) => return Ok(ConfigHome::Builtin),
        };
        // `original/tokenizer.model` keeps its configs one level up, as the full load does.
        if dir.join("tokenizer_config.json").exists() {
            return Ok(ConfigHome::Dir(dir));
        }
        if let Some(parent) = dir
            .parent()
            .filter(|p| p.join("tokenizer_config.json").exists())
        {
            return Ok(ConfigHome::Dir(parent.to_path_buf()));
        }
        // A folder (or repo) whose tokenizer is a GGUF file.
        if !gguf::gguf_files(&dir).is_empty() {
            return Ok(ConfigHome::Model);
        }
        let file = file.or_else(|| super::pick_file(&dir));
        if file.as_deref().is_some_and(is_sentencepiece) {
            return Ok(ConfigHome::Model);
        }
        Ok(ConfigHome::Dir(dir))
    }
}

/// Whether `file` is a SentencePiece model, sniffed as the full load does.
fn is_sentencepiece(file: &Path) -> bool {
    use std::io::Read;
    let mut head = Vec::with_capacity(super::DETECT_HEAD);
    std::fs::File::open(file)
        .and_then(|f| f.take(super::DETECT_HEAD as u64).read_to_end(&mut head))
        .is_ok()
        && super::detect::detect(&head) == Some(super::Format::SentencePiece)
}
