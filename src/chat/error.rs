//! The error type of the chat-template layer.

use std::path::PathBuf;

use crate::error::{Error, ErrorKind};

/// Which safety limit a render ran into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Limit {
    /// The instruction budget (fuel) of one render was spent.
    Fuel,
    /// The template recursed (macros, nested loops, recursive loops) too deeply.
    Recursion,
    /// A value or the rendered output grew past the size limit.
    Size,
    /// The template's syntax tree nests too deeply (long operator chains, deep brackets or
    /// blocks, long `elif` chains): refused when it is compiled, before it is parsed.
    Nesting,
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Limit::Fuel => "fuel (instruction)",
            Limit::Recursion => "recursion",
            Limit::Size => "size",
            Limit::Nesting => "nesting",
        })
    }
}

/// Everything that can go wrong while loading, compiling or rendering a chat template.
///
/// Where transformers' `apply_chat_template` raises, rendering returns one of these
/// (a template's `raise_exception(...)` becomes [`ChatTemplateError::Raised`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChatTemplateError {
    /// The template does not parse.
    #[error("chat template `{name}` has a syntax error: {detail}")]
    Syntax {
        /// The template's name (`default`, `tool_use`, a file name, ...).
        name: String,
        /// What the parser reported, with the location.
        detail: String,
    },
    /// The template failed while rendering (undefined attribute, type error, ...).
    #[error("chat template render failed: {detail}")]
    Render {
        /// What the engine reported, with the location.
        detail: String,
    },
    /// The template called `raise_exception(message)`.
    #[error("chat template raised an exception: {message}")]
    Raised {
        /// The message the template passed to `raise_exception`.
        message: String,
    },
    /// The render hit a safety limit (fuel, recursion or size), or the template nests too deeply
    /// to compile ([`Limit::Nesting`]).
    #[error("chat template exceeded its {limit} limit: {detail}")]
    LimitExceeded {
        /// Which limit.
        limit: Limit,
        /// What the engine reported.
        detail: String,
    },
    /// The tokenizer has no chat template (or none that fits the request).
    #[error("no chat template: {detail}")]
    NoTemplate {
        /// Why no template could be used.
        detail: String,
    },
    /// A template file or config entry could not be read or has the wrong shape.
    #[error("invalid chat template source {}: {detail}", path.display())]
    InvalidSource {
        /// The file (or `tokenizer_config.json` for config entries).
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// The request cannot be rendered as given (transformers raises a `ValueError`/`TypeError`
    /// before or after the template runs: empty conversation, `continue_final_message` together
    /// with `add_generation_prompt`, ...).
    #[error("invalid chat request: {detail}")]
    InvalidRequest {
        /// What is wrong with the request.
        detail: String,
    },
}

impl ChatTemplateError {
    /// The HTTP status a router should answer: 400 when the request is at
    /// fault (the template's `raise_exception`, a request transformers
    /// refuses, a chat request to a model without a template), 500 when the
    /// template is (syntax, render errors, safety limits, an unreadable
    /// source). [`crate::Error`] converts with the same split.
    pub fn http_status(&self) -> u16 {
        if self.is_client_error() { 400 } else { 500 }
    }

    /// Whether the request is at fault (see [`http_status`](Self::http_status)).
    pub fn is_client_error(&self) -> bool {
        matches!(
            self,
            Self::Raised { .. } | Self::InvalidRequest { .. } | Self::NoTemplate { .. }
        )
    }

    pub(crate) fn request(detail: impl Into<String>) -> Self {
        ChatTemplateError::InvalidRequest {
            detail: detail.into(),
        }
    }
}

/// A template's `raise_exception` and a request transformers refuses are the
/// request's ([`TemplateRaised`](ErrorKind::TemplateRaised),
/// [`InvalidRequest`](ErrorKind::InvalidRequest)); the rest are the server's
/// template ([`Template`](ErrorKind::Template)). The same split as
/// [`ChatTemplateError::http_status`].
impl From<ChatTemplateError> for Error {
    fn from(e: ChatTemplateError) -> Self {
        use ChatTemplateError as E;
        let kind = match &e {
            E::Raised { message } => ErrorKind::TemplateRaised {
                message: message.clone(),
            },
            E::InvalidRequest { .. } | E::NoTemplate { .. } => ErrorKind::InvalidRequest {
                detail: e.to_string(),
            },
            _ => ErrorKind::Template {
                detail: e.to_string(),
            },
        };
        Self::new(kind).with_source(e)
    }
}
