//! Which renderer turns a chat request into a prompt: the model's Jinja
//! template, or the format an inference engine renders that model with
//! instead (issue 40).

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

/// How [`Tokenizer::encode_chat`](crate::Tokenizer::encode_chat) renders a
/// request. Engines do not all use the model's template: vLLM and SGLang
/// render gpt-oss with `openai-harmony`, Mistral models with
/// `mistral-common`; a router counts and caches what its engine will see.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChatFormat {
    /// The tokenizer's chat template, exactly as transformers'
    /// `apply_chat_template` renders it (the default).
    #[default]
    Jinja,
    /// `mistral-common`'s `encode_chat_completion`, for a Mistral tokenizer
    /// (`tekken.json`, or a SentencePiece `.model.vN` file), with the request
    /// converted as vLLM converts it and validated as mistral-common does.
    MistralCommon,
    /// `openai-harmony`'s `render_conversation_for_completion`, with the
    /// request mapped to Harmony messages as vLLM's gpt-oss serving path
    /// maps it (see [`crate::harmony`]).
    Harmony,
}

impl ChatFormat {
    /// The name `rtok chat --format` takes.
    pub fn name(self) -> &'static str {
        match self {
            ChatFormat::Jinja => "jinja",
            ChatFormat::MistralCommon => "mistral",
            ChatFormat::Harmony => "harmony",
        }
    }
}

impl fmt::Display for ChatFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ChatFormat {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "jinja" => Ok(ChatFormat::Jinja),
            "mistral" | "mistral-common" | "mistral_common" => Ok(ChatFormat::MistralCommon),
            "harmony" => Ok(ChatFormat::Harmony),
            other => Err(Error::config(format!(
                "unknown chat format {other:?} (expected jinja, mistral or harmony)"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in [
            ChatFormat::Jinja,
            ChatFormat::MistralCommon,
            ChatFormat::Harmony,
        ] {
            assert_eq!(f.name().parse::<ChatFormat>().unwrap(), f);
        }
        assert!("chatml".parse::<ChatFormat>().is_err());
        assert_eq!(ChatFormat::default(), ChatFormat::Jinja);
    }
}
