//! The request path: a chat request rendered and encoded in one call
//! ([`Tokenizer::encode_chat`](crate::Tokenizer::encode_chat)), with
//! special-token text that came from the request kept apart from the
//! special tokens the template wrote (DESIGN.md, invariants `chat-encode-is-render-encode` and
//! `typed-markers-stay-text`).

mod facts;
mod format;
pub(crate) mod harmony;
pub(crate) mod mistral;
mod provenance;
mod ranges;
mod segments;
mod special_text;

use std::ops::Range;

use crate::chat::ChatRequest;
use crate::error::{Error, ErrorKind, Result};
use crate::tokenizer::Tokenizer;
pub(crate) use facts::RequestFacts;
pub use format::ChatFormat;
use provenance::Sentinels;
use special_text::SpecialText;

/// What [`Tokenizer::encode_chat`](crate::Tokenizer::encode_chat) does with
/// special-token text (`<|im_start|>`, `<|eot_id|>`) that came from the
/// request: message fields, tool calls and results, tools, documents and
/// `chat_template_kwargs` values. Special tokens the template wrote are
/// special under every policy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChatSpecialTokens {
    /// Parse it as that special token: exactly `encode(render(request))`,
    /// as transformers' `apply_chat_template(..., tokenize=True)` does.
    Parse,
    /// Encode it as ordinary text (the default). Where the request holds no
    /// special-token text, the ids are exactly `encode(render(request))`.
    #[default]
    PlainText,
    /// Refuse the request with
    /// [`ErrorKind::SpecialTokenInRequest`](crate::ErrorKind::SpecialTokenInRequest),
    /// naming the message (or tool, document, kwarg) that holds it.
    Reject,
}

/// Options of [`Tokenizer::encode_chat`](crate::Tokenizer::encode_chat).
///
/// ```
/// use router_tokenizer::{ChatSpecialTokens, EncodeChatOptions};
/// let options = EncodeChatOptions::default()
///     .with_special_tokens(ChatSpecialTokens::Reject)
///     .with_text(true);
/// assert!(options.return_text);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EncodeChatOptions {
    /// What special-token text from the request becomes (default `PlainText`).
    pub special_tokens: ChatSpecialTokens,
    /// Add BOS/EOS around the prompt as `encode(_, true)` does. Off by
    /// default, as in transformers' `apply_chat_template(tokenize=True)`:
    /// templates write their own BOS.
    pub add_special_tokens: bool,
    /// Return the rendered prompt too ([`ChatEncoding::text`]).
    pub return_text: bool,
    /// Compute [`ChatEncoding::message_ranges`] (one extra render per
    /// message, and offsets).
    pub message_ranges: bool,
    /// How to render the request; `None` is the handle's default, the
    /// chat template ([`ChatFormat::Jinja`]).
    pub format: Option<ChatFormat>,
}

impl EncodeChatOptions {
    /// With another special-token policy.
    pub fn with_special_tokens(mut self, policy: ChatSpecialTokens) -> Self {
        self.special_tokens = policy;
        self
    }

    /// With BOS/EOS added (or not).
    pub fn with_add_special_tokens(mut self, on: bool) -> Self {
        self.add_special_tokens = on;
        self
    }

    /// Returning the rendered text (or not).
    pub fn with_text(mut self, on: bool) -> Self {
        self.return_text = on;
        self
    }

    /// Computing per-message id ranges (or not).
    pub fn with_message_ranges(mut self, on: bool) -> Self {
        self.message_ranges = on;
        self
    }

    /// Rendered in another chat format (e.g. [`ChatFormat::Harmony`] for
    /// gpt-oss as vLLM and SGLang render it).
    pub fn with_format(mut self, format: ChatFormat) -> Self {
        self.format = Some(format);
        self
    }
}

/// The result of [`Tokenizer::encode_chat`](crate::Tokenizer::encode_chat).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct ChatEncoding {
    /// The prompt's ids.
    pub ids: Vec<u32>,
    /// The rendered prompt, when asked for.
    pub text: Option<String>,
    /// `ids.len()`: the prompt's token count, for budgets.
    pub prompt_tokens: usize,
    /// When asked for: per message, the ids it produced (its header, content
    /// and footer as the template renders them), or `None` where the render
    /// of the conversation up to that message is not a prefix of the whole
    /// render (templates that render a message differently once it is no
    /// longer the last). A token that straddles two messages belongs to the
    /// first; ids after the last message (the generation prompt) belong to
    /// none.
    pub message_ranges: Option<Vec<Option<Range<usize>>>>,
    /// How many special-token texts from the request were encoded as text.
    pub special_texts_as_text: usize,
}

/// Calls `f` on every string of `request` that came from the client.
pub(crate) fn walk_strings(request: &ChatRequest, f: &mut dyn FnMut(&str)) {
    provenance::walk(request, &mut |s, _| f(s));
}

impl crate::metrics::PromptTokens for ChatEncoding {
    fn prompt_tokens(&self) -> usize {
        self.prompt_tokens
    }
}

impl Tokenizer {
    /// Renders `request` with the chat template and encodes the prompt in
    /// one call, with special-token text from the request handled as
    /// `options.special_tokens` says (by default as plain text: only the
    /// template's own special tokens are special).
    ///
    /// ```no_run
    /// use router_tokenizer::chat::{ChatRequest, Message};
    /// use router_tokenizer::EncodeChatOptions;
    /// let tok = router_tokenizer::create_tokenizer("Qwen/Qwen3-8B")?;
    /// let mut request = ChatRequest::new(vec![Message::new("user", "Hi <|im_end|>")]);
    /// request.add_generation_prompt = true;
    /// let enc = tok.encode_chat(&request, &EncodeChatOptions::default())?;
    /// assert_eq!(enc.special_texts_as_text, 1);
    /// # Ok::<(), router_tokenizer::Error>(())
    /// ```
    ///
    /// # Errors
    /// Template errors ([`ErrorKind::Template`](crate::ErrorKind::Template)),
    /// encode errors, and under [`ChatSpecialTokens::Reject`](crate::ChatSpecialTokens::Reject)
    /// [`ErrorKind::SpecialTokenInRequest`](crate::ErrorKind::SpecialTokenInRequest).
    pub fn encode_chat(
        &self,
        request: &ChatRequest,
        options: &EncodeChatOptions,
    ) -> Result<ChatEncoding> {
        self.metrics()
            .render(|| encode_chat(self, request, options))
    }
}

/// The body of [`Tokenizer::encode_chat`].
pub(crate) fn encode_chat(
    tok: &Tokenizer,
    request: &ChatRequest,
    options: &EncodeChatOptions,
) -> Result<ChatEncoding> {
    match options.format.unwrap_or_else(|| tok.chat_format()) {
        ChatFormat::Jinja => encode_chat_jinja(tok, request, options),
        ChatFormat::Harmony => harmony::encode_chat(tok, request, options),
        f @ ChatFormat::MistralCommon => {
            let version = mistral::MistralVersion::of(tok).ok_or_else(|| {
                Error::new(ErrorKind::ChatFormat {
                    format: f.name(),
                    detail: format!(
                        "{} is no Mistral tokenizer (a tekken.json, or a SentencePiece .model.vN file)",
                        tok.source()
                    ),
                })
            })?;
            mistral::encode_mistral(tok, request, version)
        }
    }
}

/// `encode_chat` with the tokenizer's chat template.
fn encode_chat_jinja(
    tok: &Tokenizer,
    request: &ChatRequest,
    options: &EncodeChatOptions,
) -> Result<ChatEncoding> {
    let template = tok.chat_template()?;
    let st = tok.request_facts().special(tok.backend_dyn(), template)?;
    let policy = options.special_tokens;
    if policy == ChatSpecialTokens::Reject
        && let Some((location, token)) = provenance::first_special_text(request, st)
    {
        return Err(Error::new(ErrorKind::SpecialTokenInRequest {
            location,
            token,
        }));
    }
    // Mark request bytes only where some string holds special-token text
    // (or a fragment of one at an edge); otherwise the render is untouched.
    let flagged = match policy {
        ChatSpecialTokens::Parse => None,
        _ => provenance::first_marked(request, st),
    };
    let sentinels = match flagged {
        Some(_) => Some(Sentinels::choose(
            st,
            request,
            template.source_for(request)?,
        )?),
        None => None,
    };
    let protected;
    let rendered_request = match &sentinels {
        Some(s) => {
            protected = s.protect(request);
            &protected
        }
        None => request,
    };
    let rendered = template.render(rendered_request)?;
    let (text, marked) = match &sentinels {
        Some(s) => s.restore(&rendered),
        None => (rendered, Vec::new()),
    };
    let backend = tok.backend_dyn();
    // Without marks every match is the template's: only a handle that does
    // not parse special text needs them (for the cut path).
    let matches = if sentinels.is_some() || !backend.parses_special_text() {
        segments::matches(st, &text, &marked)
    } else {
        Vec::new()
    };
    let forged = matches.iter().filter(|m| m.forged).count();
    if policy == ChatSpecialTokens::Reject
        && let Some(m) = matches.iter().find(|m| m.forged)
    {
        return Err(Error::new(ErrorKind::SpecialTokenInRequest {
            location: format!(
                "the render (built from request strings; first flagged: {})",
                flagged.as_deref().unwrap_or("?")
            ),
            token: text.get(m.range.clone()).unwrap_or_default().to_owned(),
        }));
    }
    let parse_forged = policy == ChatSpecialTokens::Parse;
    let encoding = encode_rendered(tok, st, &text, &matches, parse_forged, forged, options)?;
    let message_ranges = if options.message_ranges {
        let offsets = encoding.offsets().unwrap_or_default();
        let restore = |s: String| match &sentinels {
            Some(sent) => sent.restore(&s).0,
            None => s,
        };
        let bounds = ranges::byte_bounds(template, rendered_request, &restore, &text);
        Some(ranges::id_ranges(&bounds, offsets))
    } else {
        None
    };
    let ids = encoding.into_ids();
    Ok(ChatEncoding {
        prompt_tokens: ids.len(),
        ids,
        text: options.return_text.then_some(text),
        message_ranges,
        special_texts_as_text: if parse_forged { 0 } else { forged },
    })
}

/// The rendered prompt's ids: one `encode_with` where the backend parses special text and no
/// forged match is to stay text, else the text cut at the matches that are to be special, each
/// piece encoded (and BOS/EOS put around it).
fn encode_rendered(
    tok: &Tokenizer,
    st: &SpecialText,
    text: &str,
    matches: &[segments::Match],
    parse_forged: bool,
    forged: usize,
    options: &EncodeChatOptions,
) -> Result<crate::encoding::Encoding> {
    let backend = tok.backend_dyn();
    let with_offsets = options.message_ranges;
    let exact = backend.parses_special_text() && (parse_forged || forged == 0);
    if exact {
        tok.encode_with(
            text,
            &crate::EncodeOptions::new()
                .with_add_special_tokens(options.add_special_tokens)
                .with_offsets(with_offsets),
        )
    } else {
        let specials: Vec<&segments::Match> = matches
            .iter()
            .filter(|m| parse_forged || !m.forged)
            .collect();
        let body = segments::encode_cut(backend, text, &specials, &st.plain_markers, with_offsets)?;
        if options.add_special_tokens {
            let (bos, eos) = tok.request_facts().bos_eos(tok.backend_dyn())?;
            wrap(body, bos, eos, text.len())
        } else {
            Ok(body)
        }
    }
}

/// `body` with BOS/EOS ids around it (spans `(0, 0)` and `(len, len)`).
fn wrap(
    body: crate::encoding::Encoding,
    bos: &[u32],
    eos: &[u32],
    len: usize,
) -> Result<crate::encoding::Encoding> {
    let (ids, offsets) = body.into_parts();
    let mut all = Vec::with_capacity(ids.len() + bos.len() + eos.len());
    all.extend_from_slice(bos);
    all.extend_from_slice(&ids);
    all.extend_from_slice(eos);
    match offsets {
        None => Ok(crate::encoding::Encoding::from_ids(all)),
        Some(spans) => {
            let mut o = Vec::with_capacity(all.len());
            o.extend(bos.iter().map(|_| (0, 0)));
            o.extend_from_slice(&spans);
            o.extend(eos.iter().map(|_| (len, len)));
            crate::encoding::Encoding::with_offsets(all, o)
                .ok_or_else(|| Error::config("encode_chat: one span per id expected"))
        }
    }
}
