//! The chat template of a source without its vocabulary.
//!
//! Rendering needs only the template and the special tokens' text (`tokenizer_config.json`,
//! `special_tokens_map.json`, `chat_template.jinja`/`.json`), a few kilobytes; building the
//! vocabulary of a real model takes 1–3 s. A router (or `rtok chat`) that only renders
//! resolves the source as [`LoadOptions::load`] does and reads just those files.

use std::path::{Path, PathBuf};

use super::source::Source;
use super::{LoadOptions, hub};
use crate::chat::{ChatTemplate, ChatTemplateError, SpecialTokens, load_chat_template};
use crate::error::{Error, Result};

impl LoadOptions {
    /// The chat template of `source` (a path, a hub id, or an encoding name, resolved as
    /// [`LoadOptions::load`] resolves it), compiled with its special tokens, without loading
    /// the vocabulary. [`LoadOptions::chat_template`] overrides the template file as it does
    /// for a full load. Renders are identical to `Tokenizer::apply_chat_template`'s.
    pub fn load_chat_template(&self, source: &str) -> Result<ChatTemplate> {
        let Some(dir) = self.config_dir(source)? else {
            if let Some(file) = &self.chat_template {
                let text = std::fs::read_to_string(file).map_err(|e| Error::io(file, e))?;
                return Ok(ChatTemplate::from_text(&text, &SpecialTokens::new())?);
            }
            return Err(ChatTemplateError::NoTemplate {
                detail: format!("{source} is a tiktoken encoding, which has no chat template"),
            }
            .into());
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
    pub fn load_special_tokens(&self, source: &str) -> Result<SpecialTokens> {
        let Some(dir) = self.config_dir(source)? else {
            return Ok(SpecialTokens::new());
        };
        let config = crate::config::read_json(&dir.join("tokenizer_config.json"))?;
        Ok(SpecialTokens::from_dir(&dir, config.as_ref())?)
    }

    /// The folder holding `source`'s configs, or `None` for a built-in encoding.
    fn config_dir(&self, source: &str) -> Result<Option<PathBuf>> {
        let dir = match Source::parse(source, self)? {
            Source::Path(path) if path.is_dir() => path,
            Source::Path(path) => path
                .parent()
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
            Source::Hub { repo, revision } => hub::resolve(&repo, revision.as_deref(), self)?,
            Source::Builtin(_) => return Ok(None),
        };
        // `original/tokenizer.model` keeps its configs one level up, as the full load does.
        if dir.join("tokenizer_config.json").exists() {
            return Ok(Some(dir));
        }
        Ok(Some(
            dir.parent()
                .filter(|p| p.join("tokenizer_config.json").exists())
                .map_or(dir.clone(), Path::to_path_buf),
        ))
    }
}
