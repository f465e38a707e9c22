//! Reading the document: `tokenizer.json` parsed and its skeleton split
//! off and upgraded ([`Prepared`]), `tokenizers`' own read of the whole of
//! it, and the guards on the `tokenizers` calls a file could break (a panic,
//! a pre-tokenizer regex it cannot run).

use std::path::Path;
use tokenizers::pipeline::{EncodeOptions, Override, PipelineToken, PipelineTokenizer};

use super::{HfBackend, assemble, regex_split};
use crate::error::{Error, Result};

/// A parsed `tokenizer.json` ready for the load.
pub(super) struct Prepared {
    pub(super) value: serde_json::Value,
    /// The document without the model's tables, canonical.
    pub(super) skeleton: serde_json::Value,
    /// Whether the file is older than the canonical (2.0) form.
    pub(super) legacy: bool,
    /// Whether its `ByteLevel` pre-tokenizer had `add_prefix_space` (taken out).
    pub(super) prefix_space: bool,
}

/// Takes `add_prefix_space: true` out of a `ByteLevel` pre-tokenizer that
/// sees each piece of text whole (alone, or alone in a `Sequence`), which
/// `tokenizers` 1.0's upgrade refuses: whether it was there. The chunk walk
/// puts the space in front of each piece instead (invariant `crate-steps-equal-reference`). After
/// other
/// pre-tokenizers the space goes in front of each of their pre-tokens; that
/// shape keeps the upgrade's refusal.
fn take_prefix_space(value: &mut serde_json::Value) -> bool {
    let Some(pre) = value.get_mut("pre_tokenizer") else {
        return false;
    };
    let is_byte_level = |m: &serde_json::Value| {
        m.get("type").and_then(serde_json::Value::as_str) == Some("ByteLevel")
    };
    let byte_level = match pre.get("type").and_then(serde_json::Value::as_str) {
        Some("ByteLevel") => Some(pre),
        Some("Sequence") => match pre
            .get_mut("pretokenizers")
            .and_then(serde_json::Value::as_array_mut)
            .map(Vec::as_mut_slice)
        {
            Some([only]) if is_byte_level(only) => Some(only),
            _ => None,
        },
        _ => None,
    };
    match byte_level.and_then(serde_json::Value::as_object_mut) {
        Some(b) if b.get("add_prefix_space") == Some(&serde_json::Value::Bool(true)) => {
            b.insert("add_prefix_space".into(), serde_json::Value::Bool(false));
            true
        }
        _ => false,
    }
}

/// Runs a `tokenizers` call that may panic on a file validation missed.
pub(super) fn no_panic<T>(path: &Path, what: &str, f: impl FnOnce() -> T) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|_| {
        Error::parse(
            path,
            format!("{what}: tokenizers 1.0 failed on this file (internal panic)"),
        )
    })
}

/// A tokenizer that loads must encode. `tokenizers` 1.0 accepts a `Split`
/// pre-tokenizer regex it has no engine for and fails on every encode: such
/// a file splits every text on the crate's steps (`splits`, invariant
/// `crate-steps-equal-reference`;
/// `Ok(true)`), or where they do not cover its pre-tokenizer is refused
/// here, with the pattern.
pub(super) fn probe(
    path: &Path,
    pipe: &PipelineTokenizer,
    value: &serde_json::Value,
    splits: Option<&regex_split::RegexSplit>,
) -> Result<bool> {
    let options = EncodeOptions {
        add_special_tokens: false,
        encode_special_tokens: false,
        padding: Override::Off,
        truncation: Override::Off,
    };
    let mut out: Vec<PipelineToken> = Vec::new();
    let result = no_panic(path, "encoding a probe text", || {
        pipe.encode_into("a 1", &options, &mut out)
    })?;
    match result {
        Err(e) if e.to_string().contains("system-regex") && splits.is_some() => Ok(true),
        Err(e) if e.to_string().contains("system-regex") => {
            let pattern = split_regex(value.get("pre_tokenizer"))
                .map(|p| format!(" {p:?}"))
                .unwrap_or_default();
            Err(Error::new(crate::error::ErrorKind::UnsupportedFormat {
                path: path.to_path_buf(),
                detected: crate::limits::short_quotes(&format!(
                    "a `Split` pre-tokenizer regex{pattern} that neither tokenizers 1.0 (natively: the GPT-2, cl100k, o200k, Llama-3, Qwen, DeepSeek families) nor the crate's `fancy-regex` splits can run; it could load but never encode"
                )),
            }))
        }
        _ => Ok(false),
    }
}

/// The first `Split` regex in a pre-tokenizer (or a `Sequence` of them).
fn split_regex(pre: Option<&serde_json::Value>) -> Option<String> {
    let pre = pre?;
    if let Some(list) = pre
        .get("pretokenizers")
        .and_then(serde_json::Value::as_array)
    {
        return list.iter().find_map(|p| split_regex(Some(p)));
    }
    pre.get("pattern")?
        .get("Regex")?
        .as_str()
        .map(str::to_owned)
}

impl HfBackend {
    /// Parses `json` and splits off its skeleton (the document without the
    /// model's vocabulary and merges), upgraded to the canonical form when
    /// the file is older ([`Prepared`]).
    pub(super) fn prepare(path: &Path, json: &str) -> Result<Prepared> {
        let mut value: serde_json::Value = serde_json::from_str(json).map_err(|e| {
            Error::parse(
                path,
                format!("line {}, column {}: {e}", e.line(), e.column()),
            )
        })?;
        // tokenizers 1.0 reads only its canonical (version 2.0) form; older
        // files are upgraded by its own converter. Only the skeleton (the file
        // without `model.vocab` and `model.merges`, a few KB) is upgraded here;
        // the model is built from the tables as read (`assemble`, invariant
        // `assembled-equals-from-json`).
        let legacy = value.get("version").and_then(serde_json::Value::as_str) != Some("2.0");
        // tokenizers 1.0 refuses this flag; the crate's walk follows it.
        let prefix_space = legacy && take_prefix_space(&mut value);
        let mut skeleton = assemble::skeleton(&value);
        if legacy {
            no_panic(path, "upgrading tokenizer.json", || {
                tokenizers::canonicalize_value(&mut skeleton)
            })?
            .map_err(|e| Error::parse(path, format!("upgrading tokenizer.json: {e}")))?;
        }
        Ok(Prepared {
            value,
            skeleton,
            legacy,
            prefix_space,
        })
    }

    /// `tokenizers`' own read of the whole document: `json` as it is, or for
    /// a `legacy` file `value` (its canonical skeleton with the tables put
    /// back) upgraded in place, which only rewrites its merges
    /// (`canonicalize_value` is idempotent on the canonical parts).
    pub(super) fn read_whole(
        path: &Path,
        json: &str,
        value: &mut serde_json::Value,
        legacy: bool,
    ) -> Result<PipelineTokenizer> {
        let canonical;
        let stand_in = assemble::stand_in_document(path, value)?;
        let json = if legacy || stand_in {
            if legacy {
                no_panic(path, "upgrading tokenizer.json", || {
                    tokenizers::canonicalize_value(value)
                })?
                .map_err(|e| Error::parse(path, format!("upgrading tokenizer.json: {e}")))?;
            }
            canonical = serde_json::to_string(value)
                .map_err(|e| Error::parse(path, format!("upgrading tokenizer.json: {e}")))?;
            canonical.as_str()
        } else {
            json
        };
        let pipe = no_panic(path, "tokenizer.json", || tokenizers::from_json(json))?
            .map_err(|e| Error::parse(path, format!("tokenizer.json: {e}")))?;
        // The reader gives an added token its model entry's id: none may be
        // a stand-in's.
        if stand_in && !assemble::same_added_ids(value, pipe.get_added_vocabulary()) {
            return Err(Error::parse(
                path,
                "an added token of this BPE with an empty vocabulary takes a stand-in id in tokenizers 1.0",
            ));
        }
        Ok(pipe)
    }
}
