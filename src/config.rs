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

/// Keys of `config.json` that bound the positions a model attends to, as
/// vLLM reads them (`_get_and_verify_max_len`): the smallest one present wins.
const CONTEXT_KEYS: &[&str] = &[
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
];

/// `model_max_length` values at or above this are transformers' "no limit"
/// sentinel (`int(1e30)`), not a context length.
const NO_LIMIT: u64 = 1 << 53;

fn positive(v: &Value) -> Option<usize> {
    let n = v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 1.0 && *f < NO_LIMIT as f64)
            .map(|f| f as u64)
    })?;
    (n > 0 && n < NO_LIMIT)
        .then(|| usize::try_from(n).ok())
        .flatten()
}

/// The context length `config.json` declares: the smallest of
/// [`CONTEXT_KEYS`] at the top level, else in `text_config` (multimodal
/// models such as Gemma-3 nest the language model's config).
pub(crate) fn config_context_length(config: &Value) -> Option<usize> {
    let smallest = |v: &Value| {
        CONTEXT_KEYS
            .iter()
            .filter_map(|k| v.get(*k).and_then(positive))
            .min()
    };
    smallest(config).or_else(|| config.get("text_config").and_then(smallest))
}

/// The model's context length: `config.json`'s (see
/// [`config_context_length`]), else `model_max_length` of
/// `tokenizer_config.json` when it is not the "no limit" sentinel.
/// A missing or unreadable `config.json` counts as absent: the loader has
/// already reported a malformed one.
pub(crate) fn context_length(
    dir: Option<&Path>,
    tokenizer_config: Option<&Value>,
) -> Option<usize> {
    let from_config = dir
        .and_then(|d| read_json(&d.join("config.json")).ok().flatten())
        .and_then(|c| config_context_length(&c));
    from_config.or_else(|| {
        tokenizer_config
            .and_then(|t| t.get("model_max_length"))
            .and_then(positive)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_length_prefers_config_and_ignores_the_sentinel() {
        use serde_json::json;
        assert_eq!(
            config_context_length(&json!({"max_position_embeddings": 40960, "n_positions": 8192})),
            Some(8192)
        );
        assert_eq!(
            config_context_length(&json!({"text_config": {"max_position_embeddings": 131072}})),
            Some(131072)
        );
        assert_eq!(
            config_context_length(&json!({"max_position_embeddings": 0})),
            None
        );
        let tc = json!({"model_max_length": 1000000000000000019884624838656u128 as f64});
        assert_eq!(context_length(None, Some(&tc)), None);
        assert_eq!(
            context_length(None, Some(&json!({"model_max_length": 2048}))),
            Some(2048)
        );
    }

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
