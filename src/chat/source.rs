//! Finding a tokenizer's chat template(s) and special tokens, with transformers' precedence:
//!
//! 1. an explicit override file (loader option) replaces everything else;
//! 2. `chat_template.jinja` (the `default` template) and `additional_chat_templates/*.jinja`
//!    (named templates) take priority over the tokenizer config;
//! 3. `tokenizer_config.json`'s `chat_template`: a string, or a list of
//!    `{"name": ..., "template": ...}` (or an object of name to template);
//! 4. `chat_template.json` (`{"chat_template": ...}`, the legacy processor file), which
//!    `AutoTokenizer` ignores but processors read; used last.
//!
//! Only these fixed file names are read; nothing a template says is ever resolved to a path.

use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use super::error::ChatTemplateError;

/// The name transformers gives the single template, or the fallback of a set.
pub(crate) const DEFAULT_NAME: &str = "default";

/// Where templates were found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TemplateOrigin {
    /// The explicit override file.
    Override(PathBuf),
    /// `chat_template.jinja` and/or `additional_chat_templates/`.
    JinjaFiles(PathBuf),
    /// `tokenizer_config.json`'s `chat_template`.
    TokenizerConfig,
    /// `chat_template.json`.
    ChatTemplateJson(PathBuf),
    /// Set in code (`set_chat_template`) or a GGUF's `tokenizer.chat_template`.
    Inline,
}

/// The template text(s) of one tokenizer, before compilation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateSource {
    /// The templates with their names, in file/config order.
    templates: Vec<(String, String)>,
    /// One unnamed template (transformers' `str`) rather than a named set (its `dict`).
    single: bool,
    origin: TemplateOrigin,
}

impl TemplateSource {
    /// One template given as text (`set_chat_template`, GGUF `tokenizer.chat_template`, a
    /// `--template` file).
    pub fn from_text(template: impl Into<String>) -> Self {
        TemplateSource {
            templates: vec![(DEFAULT_NAME.to_owned(), template.into())],
            single: true,
            origin: TemplateOrigin::Inline,
        }
    }

    /// A set of named templates (selected by name, `tool_use` or `default`).
    pub fn from_named(templates: Vec<(String, String)>) -> Self {
        let single = templates.len() == 1 && templates[0].0 == DEFAULT_NAME;
        TemplateSource {
            templates,
            single,
            origin: TemplateOrigin::Inline,
        }
    }

    /// Finds the chat template(s) of the tokenizer in `dir`, with transformers' precedence.
    ///
    /// `override_path` is an explicit template file (raw Jinja, or a JSON file holding
    /// `chat_template` as a string or a list of named templates); `tokenizer_config` is the
    /// parsed `tokenizer_config.json`, if there is one. Returns `Ok(None)` when the tokenizer
    /// has no chat template.
    pub fn discover(
        dir: &Path,
        override_path: Option<&Path>,
        tokenizer_config: Option<&Json>,
    ) -> Result<Option<Self>, ChatTemplateError> {
        if let Some(path) = override_path {
            return read_override(path).map(Some);
        }
        if let Some(found) = read_jinja_files(dir)? {
            return Ok(Some(found));
        }
        if let Some(config) = tokenizer_config
            && let Some(entry) = config.get("chat_template")
            && !entry.is_null()
        {
            let path = dir.join("tokenizer_config.json");
            let mut source = from_config_entry(entry, &path)?;
            source.origin = TemplateOrigin::TokenizerConfig;
            return Ok(Some(source));
        }
        let json_path = dir.join("chat_template.json");
        if json_path.is_file() {
            let json = read_json(&json_path)?;
            match json.get("chat_template") {
                Some(entry) if !entry.is_null() => {
                    let mut source = from_config_entry(entry, &json_path)?;
                    source.origin = TemplateOrigin::ChatTemplateJson(json_path);
                    return Ok(Some(source));
                }
                _ => {
                    return Err(invalid(&json_path, "has no `chat_template` entry"));
                }
            }
        }
        Ok(None)
    }

    /// The template names (`default` for a single template).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.templates.iter().map(|(n, _)| n.as_str())
    }

    /// The text of the template called `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.templates
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.as_str())
    }

    /// Where the templates came from.
    pub fn origin(&self) -> &TemplateOrigin {
        &self.origin
    }

    /// Whether this is one unnamed template rather than a named set.
    pub fn is_single(&self) -> bool {
        self.single
    }

    pub(crate) fn into_parts(self) -> (Vec<(String, String)>, bool) {
        (self.templates, self.single)
    }
}

fn invalid(path: &Path, detail: impl Into<String>) -> ChatTemplateError {
    ChatTemplateError::InvalidSource {
        path: path.to_owned(),
        detail: detail.into(),
    }
}

fn read_text(path: &Path) -> Result<String, ChatTemplateError> {
    std::fs::read_to_string(path).map_err(|e| invalid(path, e.to_string()))
}

fn read_json(path: &Path) -> Result<Json, ChatTemplateError> {
    let text = read_text(path)?;
    serde_json::from_str(&text).map_err(|e| invalid(path, format!("not valid JSON: {e}")))
}

fn read_override(path: &Path) -> Result<TemplateSource, ChatTemplateError> {
    let is_json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let mut source = if is_json {
        let json = read_json(path)?;
        match &json {
            Json::Object(map) => match map.get("chat_template") {
                Some(entry) if !entry.is_null() => from_config_entry(entry, path)?,
                _ => return Err(invalid(path, "has no `chat_template` entry")),
            },
            other => from_config_entry(other, path)?,
        }
    } else {
        TemplateSource::from_text(read_text(path)?)
    };
    source.origin = TemplateOrigin::Override(path.to_owned());
    Ok(source)
}

/// `chat_template.jinja` plus `additional_chat_templates/*.jinja`, as transformers reads them:
/// the files win over the config; one file alone is a single template.
fn read_jinja_files(dir: &Path) -> Result<Option<TemplateSource>, ChatTemplateError> {
    let mut templates = Vec::new();
    let main = dir.join("chat_template.jinja");
    if main.is_file() {
        templates.push((DEFAULT_NAME.to_owned(), read_text(&main)?));
    }
    let extra_dir = dir.join("additional_chat_templates");
    if extra_dir.is_dir() {
        let entries =
            std::fs::read_dir(&extra_dir).map_err(|e| invalid(&extra_dir, e.to_string()))?;
        let mut extra = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| invalid(&extra_dir, e.to_string()))?;
            let path = entry.path();
            let Some(name) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".jinja"))
            else {
                continue;
            };
            if path.is_file() {
                extra.push((name.to_owned(), read_text(&path)?));
            }
        }
        extra.sort();
        // transformers reads `chat_template.jinja` first, then the extra files into the same
        // dict, so an extra `default.jinja` replaces it.
        for (name, text) in extra {
            match templates.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => slot.1 = text,
                None => templates.push((name, text)),
            }
        }
    }
    if templates.is_empty() {
        return Ok(None);
    }
    let single = templates.len() == 1 && templates[0].0 == DEFAULT_NAME;
    Ok(Some(TemplateSource {
        templates,
        single,
        origin: TemplateOrigin::JinjaFiles(dir.to_owned()),
    }))
}

/// A `chat_template` entry: a string, a list of `{"name", "template"}`, or an object of
/// name to template.
fn from_config_entry(entry: &Json, path: &Path) -> Result<TemplateSource, ChatTemplateError> {
    match entry {
        Json::String(text) => Ok(TemplateSource::from_text(text.clone())),
        Json::Array(items) => {
            let mut templates = Vec::with_capacity(items.len());
            for item in items {
                let name = item.get("name").and_then(Json::as_str);
                let text = item.get("template").and_then(Json::as_str);
                match (name, text) {
                    (Some(name), Some(text)) => templates.push((name.to_owned(), text.to_owned())),
                    _ => {
                        return Err(invalid(
                            path,
                            "`chat_template` list entries need string `name` and `template`",
                        ));
                    }
                }
            }
            Ok(named(templates))
        }
        Json::Object(map) => {
            let mut templates = Vec::with_capacity(map.len());
            for (name, text) in map {
                match text.as_str() {
                    Some(text) => templates.push((name.clone(), text.to_owned())),
                    None => {
                        return Err(invalid(path, format!("template `{name}` is not a string")));
                    }
                }
            }
            Ok(named(templates))
        }
        _ => Err(invalid(
            path,
            "`chat_template` must be a string or a list of named templates",
        )),
    }
}

/// A named set; duplicate names keep the last, as a Python dict does.
fn named(templates: Vec<(String, String)>) -> TemplateSource {
    let mut out: Vec<(String, String)> = Vec::with_capacity(templates.len());
    for (name, text) in templates {
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = text,
            None => out.push((name, text)),
        }
    }
    TemplateSource {
        templates: out,
        single: false,
        origin: TemplateOrigin::Inline,
    }
}

/// The named special tokens a chat template sees as variables (`bos_token`,
/// `eos_token`, ..., and a config's `extra_special_tokens` such as
/// `image_token`), as strings read from `tokenizer_config.json`.
///
/// Not the tokenizer's [`SpecialTokens`](crate::SpecialTokens), which are
/// the vocabulary's special tokens with their ids: these are template
/// inputs, named as transformers names them, and need no vocabulary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TemplateSpecialTokens {
    tokens: Vec<(String, String)>,
}

/// transformers' `SPECIAL_TOKENS_ATTRIBUTES`.
const SPECIAL_TOKEN_KEYS: [&str; 7] = [
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
];

/// A token given as a string, an `AddedToken` dict (`{"__type": "AddedToken", "content": ...}`)
/// or `{"content": ...}`.
fn token_text(value: &Json) -> Option<&str> {
    match value {
        Json::String(s) => Some(s),
        Json::Object(map) => map.get("content").and_then(Json::as_str),
        _ => None,
    }
}

impl TemplateSpecialTokens {
    /// No special tokens.
    pub fn new() -> Self {
        TemplateSpecialTokens::default()
    }

    /// Reads the special tokens as transformers' `special_tokens_map` holds them: the seven
    /// named tokens of `tokenizer_config.json`, then the named `extra_special_tokens` (an
    /// object, e.g. Gemma-3's `image_token`). `special_tokens_map` is the legacy
    /// `special_tokens_map.json`, which transformers merges over the config only when the
    /// config has no `added_tokens_decoder`.
    pub fn from_config(tokenizer_config: Option<&Json>, special_tokens_map: Option<&Json>) -> Self {
        let mut merged = serde_json::Map::new();
        if let Some(Json::Object(config)) = tokenizer_config {
            merged = config.clone();
        }
        let use_legacy = !merged.contains_key("added_tokens_decoder");
        if use_legacy && let Some(Json::Object(legacy)) = special_tokens_map {
            for (key, value) in legacy {
                merged.insert(key.clone(), value.clone());
            }
        }
        let mut tokens: Vec<(String, String)> = Vec::new();
        for key in SPECIAL_TOKEN_KEYS {
            if let Some(text) = merged.get(key).and_then(token_text) {
                tokens.push((key.to_owned(), text.to_owned()));
            }
        }
        if let Some(Json::Object(extra)) = merged.get("extra_special_tokens") {
            for (key, value) in extra {
                if let Some(text) = token_text(value)
                    && !tokens.iter().any(|(k, _)| k == key)
                {
                    tokens.push((key.clone(), text.to_owned()));
                }
            }
        }
        TemplateSpecialTokens { tokens }
    }

    /// Reads `tokenizer_config.json` and `special_tokens_map.json` from `dir` (either may be
    /// missing) and calls [`TemplateSpecialTokens::from_config`].
    pub fn from_dir(
        dir: &Path,
        tokenizer_config: Option<&Json>,
    ) -> Result<Self, ChatTemplateError> {
        let map_path = dir.join("special_tokens_map.json");
        let legacy = if map_path.is_file() {
            Some(read_json(&map_path)?)
        } else {
            None
        };
        Ok(TemplateSpecialTokens::from_config(
            tokenizer_config,
            legacy.as_ref(),
        ))
    }

    /// Sets (or replaces) one token, e.g. `("bos_token", "<s>")`.
    pub fn set(&mut self, name: impl Into<String>, text: impl Into<String>) {
        let (name, text) = (name.into(), text.into());
        match self.tokens.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = text,
            None => self.tokens.push((name, text)),
        }
    }

    /// Sets each of `fallback`'s tokens that these lack.
    pub(crate) fn fill_from(&mut self, fallback: &TemplateSpecialTokens) {
        for (name, text) in fallback.iter() {
            if self.get(name).is_none() {
                self.set(name, text);
            }
        }
    }

    /// The token called `name` (`bos_token`, ...).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.tokens
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.as_str())
    }

    /// All tokens, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.tokens.iter().map(|(n, t)| (n.as_str(), t.as_str()))
    }
}
