//! Chat requests for Mistral tokenizers encoded as mistral_common's
//! `MistralTokenizer.encode_chat_completion` does (what vLLM and SGLang run
//! under `tokenizer_mode=mistral`), not through a Jinja template: the
//! templates differ from it (system prompts, tool results, escaping).
//!
//! The request is converted as vLLM builds it ([`convert`]), validated as
//! mistral_common's validator does in its default `test` mode
//! ([`validate`]), normalized ([`normalize`]) and encoded per instruct
//! version ([`encode`]). Refusals are [`ErrorKind::InvalidRequest`].

mod convert;
mod encode;
mod normalize;
mod pyjson;
mod validate;

use crate::chat::ChatRequest;
use crate::error::{Error, ErrorKind, Result};
use crate::request::ChatEncoding;
use crate::tokenizer::Tokenizer;

/// A mistral_common instruct tokenizer version (`TokenizerVersion`): which
/// rules a request is encoded with. v15 (model settings) is not covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum MistralVersion {
    /// `[INST] … [/INST]` as text; the system prompt joins the first user message.
    V1,
    /// Control tokens; tools before the last user message, which carries the
    /// system prompt; tool calls and results before it are dropped.
    V2,
    /// Like v2, with tool call ids, and every tool call and result kept.
    V3,
    /// `[SYSTEM_PROMPT]` messages in place; tool results as `id [TOOL_CONTENT] text`.
    V7,
    /// Tool calls as `[TOOL_CALLS] name [CALL_ID] id [ARGS] json`.
    V11,
    /// Tools before the first user message; no call ids.
    V13,
}

impl MistralVersion {
    /// `"v1"`, `"v2"`, …, as mistral_common names it.
    pub fn name(self) -> &'static str {
        match self {
            MistralVersion::V1 => "v1",
            MistralVersion::V2 => "v2",
            MistralVersion::V3 => "v3",
            MistralVersion::V7 => "v7",
            MistralVersion::V11 => "v11",
            MistralVersion::V13 => "v13",
        }
    }

    /// The version named `"v3"` (Tekken's `config.version`), or `None`.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "v1" => MistralVersion::V1,
            "v2" => MistralVersion::V2,
            "v3" => MistralVersion::V3,
            "v7" => MistralVersion::V7,
            "v11" => MistralVersion::V11,
            "v13" => MistralVersion::V13,
            _ => return None,
        })
    }

    /// The version a SentencePiece file name says, as mistral_common's
    /// `get_spm_version` reads it: `….model.v7` or `….model.v7m1` → v7, a
    /// bare `….model` → v1; `None` for other names.
    pub fn from_file_name(name: &str) -> Option<Self> {
        let name = name.rsplit(['/', '\\']).next().unwrap_or(name);
        if name.ends_with(".model") {
            return Some(MistralVersion::V1);
        }
        let (_, suffix) = name.rsplit_once(".model.")?;
        // `v7m1`: the multimodal part does not change the text rules.
        let version = match suffix.find('m') {
            Some(i) if suffix[i + 1..].bytes().all(|b| b.is_ascii_digit()) => &suffix[..i],
            _ => suffix,
        };
        Self::parse(version)
    }

    /// The version of a Tekken file's `config.version` (`tekken.json`).
    pub fn from_tekken_json(json: &str) -> Option<Self> {
        #[derive(serde::Deserialize)]
        struct Config {
            version: String,
        }
        #[derive(serde::Deserialize)]
        struct File {
            config: Config,
        }
        let file: File = serde_json::from_str(json).ok()?;
        Self::parse(&file.config.version)
    }

    /// The version of `tok`: a Tekken file's `config.version` as the loader
    /// kept it, else its source's SentencePiece file-name suffix. `None` for
    /// other tokenizers (and for v15, which is not covered).
    pub fn of(tok: &Tokenizer) -> Option<Self> {
        match tok.tekken_version() {
            Some(v) => Self::parse(v),
            None => Self::from_file_name(tok.source()),
        }
    }
}

/// A refused request (what mistral_common raises).
pub(super) fn invalid(reason: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidRequest {
        detail: reason.into(),
    })
}

/// `request` encoded as mistral_common's `encode_chat_completion` does for
/// a tokenizer of `version`, after vLLM's request conversion.
pub(crate) fn encode_mistral(
    tok: &Tokenizer,
    request: &ChatRequest,
    version: MistralVersion,
) -> Result<ChatEncoding> {
    let (messages, tools) = convert::convert(request)?;
    validate::validate(&messages, &tools, version)?;
    let instruct = normalize::normalize(&messages, version);
    let ids = encode::Encoder::new(tok, version).encode(&instruct, &tools)?;
    Ok(ChatEncoding {
        prompt_tokens: ids.len(),
        ids,
        ..ChatEncoding::default()
    })
}

#[cfg(test)]
mod tests {
    use super::MistralVersion as V;

    #[test]
    fn versions_from_file_names() {
        assert_eq!(V::from_file_name("a/tokenizer.model.v3"), Some(V::V3));
        assert_eq!(V::from_file_name("x.model.v7m1"), Some(V::V7));
        assert_eq!(V::from_file_name("tokenizer.model"), Some(V::V1));
        assert_eq!(V::from_file_name("tokenizer.model.v13"), Some(V::V13));
        assert_eq!(V::from_file_name("tokenizer.json"), None);
        assert_eq!(V::from_file_name("tokenizer.model.v9"), None);
        assert_eq!(
            V::from_tekken_json(r#"{"config": {"version": "v7"}, "vocab": []}"#),
            Some(V::V7)
        );
    }
}
