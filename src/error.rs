//! The crate's one error type: opaque, with a `#[non_exhaustive]` kind.

use std::fmt;
use std::path::PathBuf;

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error from loading, encoding, decoding or rendering.
///
/// The [`kind`](Error::kind) says what went wrong and names the file, model or
/// id involved; the underlying cause, when there is one, is kept as the
/// [`source`](std::error::Error::source).
pub struct Error {
    kind: ErrorKind,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

/// What went wrong. New variants may be added in minor releases.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A path, hub repository or file inside it does not exist.
    #[error("not found: {what}")]
    NotFound {
        /// What was looked for: a path, a model id, or `repo/file`.
        what: String,
    },
    /// The file exists but is in a format this build cannot load.
    #[error("{}: unsupported tokenizer format: detected {detected}", path.display())]
    UnsupportedFormat {
        /// The file that was read.
        path: PathBuf,
        /// What detection found (e.g. `"SentencePiece protobuf"`).
        detected: String,
    },
    /// A file could not be parsed.
    #[error("{}: parse error: {detail}", path.display())]
    Parse {
        /// The file that was read (empty for in-memory input).
        path: PathBuf,
        /// Where and what: `"line 3: expected base64 token"`.
        detail: String,
    },
    /// A hub lookup or download failed.
    #[error("hub error for {repo}{}{}: {detail}", file.as_deref().map(|f| format!(" ({f})")).unwrap_or_default(), if *offline { " [offline]" } else { "" })]
    Hub {
        /// The repository id.
        repo: String,
        /// The file inside the repository, if one was being fetched.
        file: Option<String>,
        /// Whether offline mode was on (`HF_HUB_OFFLINE` or the option).
        offline: bool,
        /// What happened.
        detail: String,
    },
    /// A source string is neither a path, an encoding, a model name nor a valid hub id.
    #[error("invalid tokenizer source {given:?}: {reason}")]
    InvalidSource {
        /// The source as given.
        given: String,
        /// Why it was rejected.
        reason: String,
    },
    /// A token id outside the vocabulary.
    #[error("unknown token id {id} (vocab size {vocab_size})")]
    UnknownTokenId {
        /// The offending id.
        id: u32,
        /// The vocabulary size of the tokenizer.
        vocab_size: usize,
    },
    /// The backend failed while encoding or decoding.
    #[error("{backend} backend: {detail}")]
    Backend {
        /// The backend (`"hf"`, `"tiktoken"`, …).
        backend: &'static str,
        /// What happened.
        detail: String,
    },
    /// Reading a file failed.
    #[error("{}: I/O error", path.display())]
    Io {
        /// The file.
        path: PathBuf,
    },
    /// A chat template failed to compile or render.
    #[error("chat template: {detail}")]
    Template {
        /// What happened.
        detail: String,
    },
    /// A model alias is malformed, cyclic, or points to nothing.
    #[error("model alias {name:?}: {reason}")]
    Alias {
        /// The alias (or the `NAME=SOURCE` text) at fault.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A prompt and its completion budget do not fit the model's context
    /// (a router answers HTTP 400).
    #[error(
        "prompt of {prompt_tokens} tokens plus max_tokens {max_tokens} exceeds the model's context length of {context_length} tokens"
    )]
    ContextLengthExceeded {
        /// Tokens in the prompt.
        prompt_tokens: usize,
        /// Tokens asked for the completion.
        max_tokens: usize,
        /// The model's context length.
        context_length: usize,
    },
    /// A token budget too small for even one character: splitting cannot
    /// make progress.
    #[error("a budget of {max_tokens} tokens cannot hold the character at byte {at}")]
    BudgetTooSmall {
        /// The budget per chunk.
        max_tokens: usize,
        /// Byte offset of the character that does not fit alone.
        at: usize,
    },
    /// A file was refused before or while it was read: not a regular file,
    /// over a size limit, or holding ids or lengths out of proportion with
    /// its contents (DESIGN.md, "Limits").
    #[error("{}: refused: {reason}", path.display())]
    Refused {
        /// The file.
        path: PathBuf,
        /// Which limit it broke.
        reason: String,
    },
    /// Special-token text came from a chat request where
    /// [`ChatSpecialTokens::Reject`](crate::ChatSpecialTokens::Reject) refuses it.
    #[error("special-token text {token:?} in {location} of the chat request")]
    SpecialTokenInRequest {
        /// Where it is: `message 2 (`content`)`, `tool 0`, `document 1`, …
        location: String,
        /// The special-token text.
        token: String,
    },
    /// A chat request the tokenizer's chat format refuses (mistral_common
    /// raises for it: a tool result without its call, a bad tool call id,
    /// roles out of order); a router answers HTTP 400.
    #[error("invalid chat request: {reason}")]
    InvalidRequest {
        /// What is wrong.
        reason: String,
    },
    /// A chat format ([`ChatFormat`](crate::ChatFormat)) cannot render this
    /// request with this tokenizer: not supported yet, a request it refuses
    /// (as the engine it mirrors refuses it), or a vocabulary without its
    /// control tokens.
    #[error("chat format {format}: {detail}")]
    ChatFormat {
        /// The format (`harmony`, `mistral`, …).
        format: &'static str,
        /// What is wrong.
        detail: String,
    },
    /// A configuration value is out of range.
    #[error("invalid configuration: {detail}")]
    Config {
        /// What is wrong.
        detail: String,
    },
}

impl Error {
    pub(crate) fn new(kind: ErrorKind) -> Self {
        Self { kind, source: None }
    }

    pub(crate) fn with_source(
        mut self,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        self.source = Some(source.into());
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    pub(crate) fn io(path: impl Into<PathBuf>, err: std::io::Error) -> Self {
        let path = path.into();
        if err.kind() == std::io::ErrorKind::NotFound {
            return Self::new(ErrorKind::NotFound {
                what: path.display().to_string(),
            })
            .with_source(err);
        }
        Self::new(ErrorKind::Io { path }).with_source(err)
    }

    /// A parse error; values quoted from the file are shortened.
    pub(crate) fn parse(path: impl Into<PathBuf>, detail: impl Into<String>) -> Self {
        Self::new(ErrorKind::Parse {
            path: path.into(),
            detail: crate::limits::short_quotes(&detail.into()),
        })
    }

    pub(crate) fn backend(backend: &'static str, detail: impl Into<String>) -> Self {
        Self::new(ErrorKind::Backend {
            backend,
            detail: detail.into(),
        })
    }

    pub(crate) fn unknown_id(id: u32, vocab_size: usize) -> Self {
        Self::new(ErrorKind::UnknownTokenId { id, vocab_size })
    }

    pub(crate) fn config(detail: impl Into<String>) -> Self {
        Self::new(ErrorKind::Config {
            detail: detail.into(),
        })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.kind, f)?;
        if let (Some(source), ErrorKind::Io { .. } | ErrorKind::NotFound { .. }) =
            (&self.source, &self.kind)
        {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.kind);
        if let Some(source) = &self.source {
            d.field("source", source);
        }
        d.finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<crate::chat::ChatTemplateError> for Error {
    fn from(e: crate::chat::ChatTemplateError) -> Self {
        Self::new(ErrorKind::Template {
            detail: e.to_string(),
        })
        .with_source(e)
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Self::new(kind)
    }
}
