//! The crate's one error type: opaque, with a `#[non_exhaustive]` kind.

use std::fmt;
use std::path::PathBuf;

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error from loading, encoding, decoding or rendering.
///
/// The [`kind`](Error::kind) says what went wrong and names the file, model or
/// id involved; the underlying cause, when there is one, is kept as the
/// [`source`](std::error::Error::source). [`http_status`](Error::http_status)
/// says whose fault it is, so a router maps errors without a table of its own.
///
/// ```
/// use router_tokenizer::{ErrorKind, LoadOptions, ModelAliases};
///
/// let mut aliases = ModelAliases::new();
/// aliases.insert("ghost", "/no/such/tokenizer.json")?;
/// let err = LoadOptions::default().with_aliases(aliases).load("ghost").unwrap_err();
/// // The kind is the cause's; the alias is context.
/// assert!(matches!(err.kind(), ErrorKind::NotFound { .. }));
/// assert_eq!(err.alias(), Some("ghost"));
/// assert_eq!(err.http_status(), 404);
/// assert!(err.is_client_error());
/// # Ok::<(), router_tokenizer::Error>(())
/// ```
pub struct Error {
    kind: ErrorKind,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    /// The alias and the source it resolved to, when the failure was reached
    /// through an alias (boxed: errors stay two words plus the kind).
    alias: Option<Box<(String, String)>>,
}

/// What went wrong. New variants may be added in minor releases.
///
/// Each variant's docs end with the HTTP status a router should answer
/// ([`ErrorKind::http_status`]): 4xx when the request is at fault (a model
/// name that names nothing, an id outside the vocabulary, a prompt over the
/// context, a stop string the API forbids, a template's own
/// `raise_exception`), 5xx when the server is (its files, its
/// configuration, its templates, the hub it downloads from).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A path, hub repository or file inside it does not exist; also a hub
    /// model or revision missing from the cache in offline mode. **404**.
    #[error("not found: {what}")]
    NotFound {
        /// What was looked for: a path, a model id, or `repo/file`.
        what: String,
    },
    /// The file exists but is in a format this build cannot load. **500**.
    #[error("{}: unsupported tokenizer format: detected {detected}", path.display())]
    UnsupportedFormat {
        /// The file that was read.
        path: PathBuf,
        /// What detection found (e.g. `"SentencePiece protobuf"`).
        detected: String,
    },
    /// A file could not be parsed: the server's data is broken. **500**.
    #[error("{}: parse error: {detail}", path.display())]
    Parse {
        /// The file that was read (empty for in-memory input).
        path: PathBuf,
        /// Where and what: `"line 3: expected base64 token"`.
        detail: String,
    },
    /// A hub lookup or download failed (network, timeouts, HTTP 401/403/5xx,
    /// a cache entry refused, no cache folder). A repository or revision that
    /// does not exist is [`NotFound`](Self::NotFound). **503**: the hub or
    /// the server's access to it, not the request.
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
    /// A source string is neither a path, an encoding, a model name nor a
    /// valid hub id, or names a path outside the allowed folders. **400**.
    #[error("invalid tokenizer source {given:?}: {reason}")]
    InvalidSource {
        /// The source as given.
        given: String,
        /// Why it was rejected.
        reason: String,
    },
    /// A token id outside the vocabulary. **400**: the ids came with the request.
    #[error("unknown token id {id} (vocab size {vocab_size})")]
    UnknownTokenId {
        /// The offending id.
        id: u32,
        /// The vocabulary size of the tokenizer.
        vocab_size: usize,
    },
    /// The backend failed while encoding or decoding. **500**.
    #[error("{backend} backend: {detail}")]
    Backend {
        /// The backend (`"hf"`, `"tiktoken"`, …).
        backend: &'static str,
        /// What happened.
        detail: String,
    },
    /// Reading a file failed. **500**.
    #[error("{}: I/O error", path.display())]
    Io {
        /// The file.
        path: PathBuf,
    },
    /// A chat template failed to compile or render: a syntax error, a render
    /// error, a safety limit, or an unreadable template source. **500**: the
    /// server's template is broken (the cause, a
    /// [`ChatTemplateError`](crate::chat::ChatTemplateError), is the source).
    #[error("chat template: {detail}")]
    Template {
        /// What happened.
        detail: String,
    },
    /// A chat template called `raise_exception(message)`: the template
    /// refuses this request (roles out of order, a tool call it cannot
    /// show, …). **400**, with the template's message for the client.
    #[error("chat template raised an exception: {message}")]
    TemplateRaised {
        /// The message the template passed to `raise_exception`.
        message: String,
    },
    /// A model alias is malformed, cyclic, or points to nothing. **500**: the
    /// server's alias table. (A source that fails to load through a valid
    /// alias keeps its own kind; [`Error::alias`] names the alias.)
    #[error("model alias {name:?}: {reason}")]
    Alias {
        /// The alias (or the `NAME=SOURCE` text) at fault.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A prompt and its completion budget do not fit the model's context. **400**
    /// (OpenAI's `context_length_exceeded`).
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
    /// make progress. **400**: the budget is the caller's.
    #[error("a budget of {max_tokens} tokens cannot hold the character at byte {at}")]
    BudgetTooSmall {
        /// The budget per chunk.
        max_tokens: usize,
        /// Byte offset of the character that does not fit alone.
        at: usize,
    },
    /// A file was refused before or while it was read: not a regular file,
    /// over a size limit, or holding ids or lengths out of proportion with
    /// its contents (DESIGN.md invariant `hostile-input-bounded`). **500**.
    #[error("{}: refused: {reason}", path.display())]
    Refused {
        /// The file.
        path: PathBuf,
        /// Which limit it broke.
        reason: String,
    },
    /// Special-token text came from a chat request where
    /// [`ChatSpecialTokens::Reject`](crate::ChatSpecialTokens::Reject) refuses it. **400**.
    #[error("special-token text {token:?} in {location} of the chat request")]
    SpecialTokenInRequest {
        /// Where it is: `message 2 (`content`)`, `tool 0`, `document 1`, …
        location: String,
        /// The special-token text.
        token: String,
    },
    /// A chat format ([`ChatFormat`](crate::ChatFormat)) cannot render this
    /// request with this tokenizer: not supported yet, a request it refuses
    /// (as the engine it mirrors refuses it), or a vocabulary without its
    /// control tokens. **500**: the server chose a format this tokenizer
    /// cannot render; a request the format refuses is [`ErrorKind::InvalidRequest`].
    #[error("chat format {format}: {detail}")]
    ChatFormat {
        /// The format (`harmony`, `mistral`, …).
        format: &'static str,
        /// What is wrong.
        detail: String,
    },
    /// A configuration value is out of range. **500**: the server's options.
    #[error("invalid configuration: {detail}")]
    Config {
        /// What is wrong.
        detail: String,
    },
    /// A request parameter is invalid: an empty stop string or stop
    /// sequence, a chat request transformers would refuse (empty
    /// conversation, `continue_final_message` with `add_generation_prompt`),
    /// a chat request to a model without a chat template. **400**.
    #[error("invalid request: {detail}")]
    InvalidRequest {
        /// What is wrong.
        detail: String,
    },
    /// [`Tokenizer::check_budget`](crate::Tokenizer::check_budget) was asked
    /// about a model whose context length is unknown (its configs name none).
    /// **500**: the server must set one
    /// ([`with_context_length`](crate::Tokenizer::with_context_length)); a
    /// budget that cannot be checked is not passed silently.
    #[error(
        "the context length of {model} is unknown, so the budget cannot be checked (set one with Tokenizer::with_context_length)"
    )]
    ContextLengthUnknown {
        /// The tokenizer's source.
        model: String,
    },
}

impl ErrorKind {
    /// The HTTP status a router should answer for this kind (see each
    /// variant): 400 or 404 for the request's faults, 500 or 503 for the
    /// server's.
    pub fn http_status(&self) -> u16 {
        match self {
            Self::NotFound { .. } => 404,
            Self::InvalidSource { .. }
            | Self::UnknownTokenId { .. }
            | Self::TemplateRaised { .. }
            | Self::ContextLengthExceeded { .. }
            | Self::BudgetTooSmall { .. }
            | Self::SpecialTokenInRequest { .. }
            | Self::InvalidRequest { .. } => 400,
            Self::Hub { .. } => 503,
            Self::UnsupportedFormat { .. }
            | Self::Parse { .. }
            | Self::Backend { .. }
            | Self::Io { .. }
            | Self::Template { .. }
            | Self::Alias { .. }
            | Self::Refused { .. }
            | Self::Config { .. }
            | Self::ChatFormat { .. }
            | Self::ContextLengthUnknown { .. } => 500,
        }
    }

    /// Whether the request is at fault (a 4xx status).
    pub fn is_client_error(&self) -> bool {
        (400..500).contains(&self.http_status())
    }

    /// The variant's name in snake case (`not_found`, `hub`, …): the `kind`
    /// label of `rtok_load_errors_total`, a fixed set so failures cannot
    /// mint series of their own.
    pub(crate) fn metric_name(&self) -> &'static str {
        match self {
            Self::NotFound { .. } => "not_found",
            Self::UnsupportedFormat { .. } => "unsupported_format",
            Self::Parse { .. } => "parse",
            Self::Hub { .. } => "hub",
            Self::InvalidSource { .. } => "invalid_source",
            Self::UnknownTokenId { .. } => "unknown_token_id",
            Self::Backend { .. } => "backend",
            Self::Io { .. } => "io",
            Self::Template { .. } => "template",
            Self::TemplateRaised { .. } => "template_raised",
            Self::Alias { .. } => "alias",
            Self::ContextLengthExceeded { .. } => "context_length_exceeded",
            Self::BudgetTooSmall { .. } => "budget_too_small",
            Self::Refused { .. } => "refused",
            Self::SpecialTokenInRequest { .. } => "special_token_in_request",
            Self::ChatFormat { .. } => "chat_format",
            Self::Config { .. } => "config",
            Self::InvalidRequest { .. } => "invalid_request",
            Self::ContextLengthUnknown { .. } => "context_length_unknown",
        }
    }
}

impl Error {
    pub(crate) fn new(kind: ErrorKind) -> Self {
        Self {
            kind,
            source: None,
            alias: None,
        }
    }

    /// This error, reached through the alias `name` that resolved to `resolved`.
    pub(crate) fn through_alias(mut self, name: &str, resolved: &str) -> Self {
        self.alias = Some(Box::new((name.to_owned(), resolved.to_owned())));
        self
    }

    /// The model alias the failing source was reached through, if any (the
    /// kind is the cause's own: a missing model behind an alias is still
    /// [`NotFound`](ErrorKind::NotFound)).
    pub fn alias(&self) -> Option<&str> {
        self.alias.as_deref().map(|(name, _)| name.as_str())
    }

    /// The HTTP status a router should answer ([`ErrorKind::http_status`]).
    pub fn http_status(&self) -> u16 {
        self.kind.http_status()
    }

    /// Whether the request is at fault (4xx): the client should change it.
    pub fn is_client_error(&self) -> bool {
        self.kind.is_client_error()
    }

    /// Whether the server is at fault (5xx): its files, configuration,
    /// templates or hub access.
    pub fn is_server_error(&self) -> bool {
        !self.is_client_error()
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
            detail: short_quotes(&detail.into()),
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

    pub(crate) fn request(detail: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidRequest {
            detail: detail.into(),
        })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((name, resolved)) = self.alias.as_deref() {
            write!(f, "model alias {name:?} (-> {resolved:?}): ")?;
        }
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
        if let Some((name, resolved)) = self.alias.as_deref() {
            d.field("alias", name).field("resolved", resolved);
        }
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

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Self::new(kind)
    }
}

/// Longest value a parse error quotes from a file, in chars.
pub(crate) const MAX_QUOTED_CHARS: usize = 24;

/// Shortens every `"quoted"` value in a message to [`MAX_QUOTED_CHARS`], so
/// errors never echo long stretches of a file (a client-chosen path must not
/// turn error messages into a file reader), and caps the whole message.
pub(crate) fn short_quotes(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(512));
    for (i, part) in message.split('"').enumerate() {
        if i > 0 {
            out.push('"');
        }
        if i % 2 == 1 && part.chars().count() > MAX_QUOTED_CHARS {
            out.extend(part.chars().take(MAX_QUOTED_CHARS));
            out.push('…');
        } else {
            out.push_str(part);
        }
    }
    if out.chars().count() > 512 {
        out = out.chars().take(512).collect();
        out.push('…');
    }
    out
}
