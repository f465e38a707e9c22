//! The JSON files beside a tokenizer: `tokenizer_config.json`,
//! `special_tokens_map.json`, `config.json`, `generation_config.json`.
//!
//! Read leniently: a missing optional file is fine; a present but malformed one
//! is a parse error naming it.

use serde_json::Value;
use std::path::Path;

use crate::error::{Error, Result};

/// What the loader needs from `tokenizer_config.json` (+ `special_tokens_map.json`).
#[derive(Debug, Clone, Default)]
pub(crate) struct TokenizerConfig {
    pub tokenizer_class: Option<String>,
    pub add_bos_token: Option<bool>,
    pub add_eos_token: Option<bool>,
    /// `bos_token`, `eos_token`, … by role name without the `_token` suffix.
    pub roles: Vec<(String, String)>,
    /// `added_tokens_decoder`: id, content, special.
    pub added_tokens: Vec<(u32, String, bool)>,
    /// The raw file, for the chat template loader.
    pub raw: Option<Value>,
}

impl TokenizerConfig {
    /// Reads `tokenizer_config.json` and `special_tokens_map.json` from `dir`.
    pub(crate) fn read_dir(dir: &Path) -> Result<Self> {
        let mut config = match read_json(&dir.join("tokenizer_config.json"))? {
            Some(raw) => Self::from_value(raw),
            None => Self::default(),
        };
        if let Some(map) = read_json(&dir.join("special_tokens_map.json"))? {
            config.collect_roles(&map);
        }
        Ok(config)
    }

    /// The fields of a parsed `tokenizer_config.json`.
    pub(crate) fn from_value(raw: Value) -> Self {
        let mut config = Self::default();
        {
            config.tokenizer_class = raw
                .get("tokenizer_class")
                .and_then(Value::as_str)
                .map(str::to_owned);
            config.add_bos_token = raw.get("add_bos_token").and_then(Value::as_bool);
            config.add_eos_token = raw.get("add_eos_token").and_then(Value::as_bool);
            config.collect_roles(&raw);
            if let Some(Value::Object(map)) = raw.get("added_tokens_decoder") {
                for (id, token) in map {
                    let (Ok(id), Some(content)) = (id.parse::<u32>(), token_content(token)) else {
                        continue;
                    };
                    let special = token
                        .get("special")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    config.added_tokens.push((id, content, special));
                }
                config.added_tokens.sort_by_key(|t| t.0);
            }
            config.raw = Some(raw);
        }
        config
    }

    /// Role tokens from `{"bos_token": "<s>" | {"content": "<s>", …}}`; first value wins.
    fn collect_roles(&mut self, raw: &Value) {
        for role in ["bos", "eos", "unk", "pad", "sep", "cls", "mask"] {
            if self.roles.iter().any(|(r, _)| r == role) {
                continue;
            }
            if let Some(content) = raw.get(format!("{role}_token")).and_then(token_content) {
                self.roles.push((role.to_owned(), content));
            }
        }
    }

    /// The content of a role token (`"bos"`, `"eos"`, …).
    pub(crate) fn special_token(&self, role: &str) -> Option<String> {
        self.roles
            .iter()
            .find(|(r, _)| r == role)
            .map(|(_, c)| c.clone())
    }
}

/// A token written as a string or an AddedToken dict.
pub(crate) fn token_content(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Object(map) => map
            .get("content")
            .and_then(Value::as_str)
            .map(str::to_owned),
        _ => None,
    }
}

/// Reads a JSON file if it exists.
pub(crate) fn read_json(path: &Path) -> Result<Option<Value>> {
    let Some(bytes) = crate::limits::read_optional(path, crate::limits::MAX_CONFIG_JSON)? else {
        return Ok(None);
    };
    let text =
        std::str::from_utf8(&bytes).map_err(|e| Error::parse(path, format!("not UTF-8: {e}")))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    serde_json::from_str(text).map(Some).map_err(|e| {
        Error::parse(
            path,
            format!("line {}, column {}: {e}", e.line(), e.column()),
        )
    })
}

/// `eos_token_id` of `config.json` / `generation_config.json` in `dir`: an int or a list.
pub(crate) fn eos_ids(dir: &Path, file: &str) -> Result<Vec<u32>> {
    let Some(raw) = read_json(&dir.join(file))? else {
        return Ok(Vec::new());
    };
    let ids = match raw.get("eos_token_id") {
        Some(Value::Number(n)) => n.as_u64().into_iter().collect(),
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_u64).collect(),
        _ => Vec::new(),
    };
    Ok(ids
        .into_iter()
        .filter_map(|id| u32::try_from(id).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_may_be_strings_or_dicts() {
        assert_eq!(
            token_content(&serde_json::json!("<s>")).as_deref(),
            Some("<s>")
        );
        assert_eq!(
            token_content(
                &serde_json::json!({"__type": "AddedToken", "content": "<｜end▁of▁sentence｜>"})
            )
            .as_deref(),
            Some("<｜end▁of▁sentence｜>")
        );
        assert_eq!(token_content(&serde_json::json!(null)), None);
    }
}
